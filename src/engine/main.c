// SPDX-License-Identifier: GPL-2.0
/*
 * The engine executable (pcplab-native, pcplab-sim): reads a JSON request
 * on stdin and writes JSON on stdout (docs/engine-protocol.md), lists
 * the workloads (`workloads`) or the PCP policies (`policies`) or prints
 * the spec-key table (`keys`), all without input. Exit 0 on success, 2 on bad input (one line on stderr),
 * 3 if an invariant broke, 1 on any other failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <pcplab/engine.h>
#include <pcplab/model_workload.h>

static char *read_stdin(void)
{
	size_t cap = 4096, len = 0, n;
	char *buf = malloc(cap);

	while (buf && (n = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
		len += n;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	if (buf)
		buf[len] = 0;
	return buf;
}

/*
 * A run may last a day of virtual time; if the front end dies (SIGKILL,
 * a crash), nobody reads its result, so the engine must not run on as an
 * orphan: the kernel sends SIGKILL when the parent exits. The parent may
 * already be gone by the time prctl() takes effect: check once more.
 */
static int die_with_parent(void)
{
	pid_t parent = getppid();

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) {
		fprintf(stderr,
			"pcplab: error: the front end exited before the run started\n");
		return -1;
	}
	return 0;
}

static int print_json(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	if (!s)
		return 1;
	puts(s);
	cJSON_free(s);
	cJSON_Delete(o);
	return 0;
}

static int bad_input(const char *err)
{
	fprintf(stderr, "pcplab: error: %s\n", err);
	return 2;
}

/* True if the model engines run the workload called @name. */
static bool model_runs(const char *name)
{
	return find_model_workload(name);
}

/* The hooks a policy fills, by the kernel decision each replaces. */
static cJSON *policy_decisions(const struct pcp_policy_ops *ops)
{
	cJSON *list = cJSON_CreateArray();
	const struct {
		bool set;
		const char *what;
	} decisions[] = {
		{ ops->nr_alloc, "nr_pcp_alloc" },
		{ ops->refill, "refill (rmqueue_bulk)" },
		{ ops->nr_high, "nr_pcp_high" },
		{ ops->nr_free, "nr_pcp_free" },
		{ ops->zone_locked, "zone->lock found held" },
		{ ops->free_remote, "free to another CPU" },
		{ ops->no_time_decay, "no decay_pcp_high" },
		{ ops->skip_merge_order0, "order-0 merge (__free_one_page)" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(decisions); i++)
		if (decisions[i].set)
			cJSON_AddItemToArray(
				list, cJSON_CreateString(decisions[i].what));
	return list;
}

/* [{name, summary, decides, needs}], sorted by name: the `policies` command. */
static cJSON *pcp_policies_json(void)
{
	cJSON *out = cJSON_CreateArray();
	char names[512], *save = NULL;

	snprintf(names, sizeof(names), "%s", pcp_policy_names());
	for (char *name = strtok_r(names, ", ", &save); name;
	     name = strtok_r(NULL, ", ", &save)) {
		const struct pcp_policy_ops *ops = find_pcp_policy(name);
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "name", ops->name);
		cJSON_AddStringToObject(o, "summary", ops->summary);
		cJSON_AddItemToObject(o, "decides", policy_decisions(ops));
		cJSON_AddStringToObject(
			o, "needs",
			ops->needs_high_autotune ? "kernel 6.18+" : "");
		cJSON_AddItemToArray(out, o);
	}
	return out;
}

static int resolve_main(const char *text)
{
	char err[ERRLEN];
	struct spec spec;
	cJSON *o;

	if (spec_parse(text, &spec, err))
		return bad_input(err);
	spec_apply_policy(&spec);
	o = spec_to_json(&spec);
	cJSON_AddNumberToObject(o, "memory_bytes",
				(double)engine_memory_bytes(&spec));
	cJSON_AddItemToObject(o, "machine_detail", engine_machine_json(&spec));
	return print_json(o);
}

static int run_main(const char *text)
{
	char err[ERRLEN];
	struct spec spec;
	struct run_result *res;
	int ret;

	if (spec_parse(text, &spec, err))
		return bad_input(err);
	spec_apply_policy(&spec);
	res = calloc(1, sizeof(*res));
	if (!res || engine_run(&spec, res, err)) {
		fprintf(stderr, "pcplab: error: %s\n", res ? err : "no memory");
		return 1;
	}
	ret = res->inv.pages_conserved && res->inv_drained.pages_conserved ? 0
									   : 3;
	print_json(result_to_json(&spec, res));
	if (ret)
		fprintf(stderr, "pcplab: invariant violated: %s\n",
			res->inv.nr_violations
				? res->inv.violations[0]
				: res->inv_drained.violations[0]);
	free(res);
	free_area_exit();
	return ret;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	char err[ERRLEN];
	char *text;
	int ret;

	if (!strcmp(cmd, "keys"))
		return spec_keys_main();
	if (!strcmp(cmd, "policies"))
		return print_json(pcp_policies_json());
	if (!strcmp(cmd, "workloads")) /* no platform needed to list them */
		return workloads_main(WORKLOAD_MODEL, model_runs);
	arch_init();
	if (!strcmp(cmd, "proptest"))
		return proptest_main(argc - 1, argv + 1);
	if (strcmp(cmd, "run") && strcmp(cmd, "resolve") &&
	    strcmp(cmd, "pagesets")) {
		fprintf(stderr,
			"pcplab: error: unknown command '%s'; known: run, resolve, pagesets, proptest, workloads, keys, policies\n",
			cmd);
		return 2;
	}
	if (die_with_parent())
		return 1;
	text = read_stdin();
	if (!text)
		return 1;
	if (!strcmp(cmd, "pagesets"))
		ret = pagesets_main(text, err) ? bad_input(err) : 0;
	else if (!strcmp(cmd, "resolve"))
		ret = resolve_main(text);
	else
		ret = run_main(text);
	free(text);
	return ret;
}
