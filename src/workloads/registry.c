// SPDX-License-Identifier: GPL-2.0
/*
 * The registry of workload descriptors (<pcplab/workload.h>), linked into
 * every engine: lookup by name, the names an engine runs for its error
 * messages, and the `workloads` listing that the front end reads. The
 * entries are wherever the linker put them; everything shown to a user is
 * sorted by name, so the order does not depend on the link.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/workload.h>

extern const struct workload *const __start_pcplab_workloads[];
extern const struct workload *const __stop_pcplab_workloads[];

/* The workload called @name, whichever engines run it, or NULL. */
const struct workload *find_workload(const char *name)
{
	const struct workload *const *pos;

	for_each_registry_entry (pos, pcplab_workloads)
		if (!strcmp((*pos)->name, name))
			return *pos;
	return NULL;
}

static int cmp_by_name(const void *a, const void *b)
{
	const struct workload *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/*
 * The workloads that run on any of @engines, sorted by name, in a new
 * array of which *@nr are used (NULL if out of memory).
 */
static const struct workload **sorted_workloads(unsigned int engines,
						size_t *nr)
{
	size_t cap = __stop_pcplab_workloads - __start_pcplab_workloads;
	const struct workload **out = calloc(cap + 1, sizeof(*out));
	const struct workload *const *pos;

	*nr = 0;
	if (!out)
		return NULL;
	for_each_registry_entry (pos, pcplab_workloads)
		if ((*pos)->engines & engines)
			out[(*nr)++] = *pos;
	qsort(out, *nr, sizeof(*out), cmp_by_name);
	return out;
}

/* "a, b, c": the names of the workloads @engine runs, sorted. */
const char *workload_names(unsigned int engine)
{
	/* the model's and the host's; built once, while the spec is parsed */
	static char names[2][512];
	char *buf = names[engine == WORKLOAD_HOST];
	const struct workload **wl;
	size_t nr, len = 0;

	if (buf[0])
		return buf;
	wl = sorted_workloads(engine, &nr);
	for (size_t i = 0; wl && i < nr && len < sizeof(names[0]); i++)
		len += snprintf(buf + len, sizeof(names[0]) - len, "%s%s",
				i ? ", " : "", wl[i]->name);
	free(wl);
	return buf;
}

/* "native, sim, host": the engines of @engines, as the front end names them. */
static const char *engine_list(unsigned int engines)
{
	switch (engines & (WORKLOAD_MODEL | WORKLOAD_HOST)) {
	case WORKLOAD_MODEL:
		return "native, sim";
	case WORKLOAD_HOST:
		return "host";
	case WORKLOAD_MODEL | WORKLOAD_HOST:
		return "native, sim, host";
	}
	return "no engine";
}

/* Say in @err why @engine refuses workload @name (unknown, or not here). */
void workload_refusal(const char *name, unsigned int engine, char *err,
		      size_t len)
{
	const struct workload *wl = find_workload(name);

	if (!wl)
		snprintf(err, len, "unknown workload '%s'; known: %s", name,
			 workload_names(engine));
	else
		snprintf(err, len,
			 "workload '%s' runs on %s only; %s workloads: %s",
			 name, engine_list(wl->engines),
			 engine == WORKLOAD_HOST ? "host" : "model",
			 workload_names(engine));
}

static const char *const ops_names[] = {
	[WORKLOAD_OPS_PAGES] = "pages",
	[WORKLOAD_OPS_BOGO] = "bogo_ops",
	[WORKLOAD_OPS_LOCKS] = "lock_acquisitions",
};

/* One workload's entry of the listing. */
static cJSON *workload_json(const struct workload *wl)
{
	static const char *const engine_names[] = { "native", "sim", "host" };
	static const unsigned int engine_bits[] = { WORKLOAD_MODEL,
						    WORKLOAD_MODEL,
						    WORKLOAD_HOST };
	cJSON *o = cJSON_CreateObject();
	cJSON *engines;

	cJSON_AddStringToObject(o, "name", wl->name);
	cJSON_AddStringToObject(o, "description", wl->description);
	cJSON_AddNumberToObject(o, "default_size_mib",
				(double)wl->default_size_mib);
	if (wl->default_tasks)
		cJSON_AddNumberToObject(o, "default_tasks", wl->default_tasks);
	else
		cJSON_AddNullToObject(o, "default_tasks");
	cJSON_AddStringToObject(o, "placement",
				wl->unpinned ? "spread" : "pinned");
	cJSON_AddStringToObject(o, "ops", ops_names[wl->ops]);
	engines = cJSON_AddArrayToObject(o, "engines");
	for (size_t i = 0; i < ARRAY_SIZE(engine_bits); i++)
		if (wl->engines & engine_bits[i])
			cJSON_AddItemToArray(
				engines, cJSON_CreateString(engine_names[i]));
	return o;
}

/*
 * [{name, description, default_size_mib, default_tasks (null: one per
 * CPU), placement, ops, engines}], sorted by name.
 */
cJSON *workloads_json(void)
{
	cJSON *list = cJSON_CreateArray();
	const struct workload **wl;
	size_t nr;

	wl = sorted_workloads(WORKLOAD_MODEL | WORKLOAD_HOST, &nr);
	for (size_t i = 0; wl && i < nr; i++)
		cJSON_AddItemToArray(list, workload_json(wl[i]));
	free(wl);
	return list;
}

/* The `workloads` command of an engine (workload.h). */
int workloads_main(unsigned int engine, bool (*runs_here)(const char *name))
{
	const struct workload *const *pos;
	cJSON *list;
	char *text;

	for_each_registry_entry (pos, pcplab_workloads) {
		bool declared = (*pos)->engines & engine;

		if (declared == runs_here((*pos)->name))
			continue;
		fprintf(stderr,
			"pcplab: error: workload '%s' says it runs on %s, but this engine has %s; make .engines in src/workloads/%s/workload.c and its halves agree\n",
			(*pos)->name, engine_list((*pos)->engines),
			declared ? "no half for it" : "a half for it",
			(*pos)->name);
		return 1;
	}
	list = workloads_json();
	text = cJSON_PrintUnformatted(list);
	cJSON_Delete(list);
	if (!text)
		return 1;
	puts(text);
	cJSON_free(text);
	return fflush(stdout) ? 1 : 0;
}
