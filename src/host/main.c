// SPDX-License-Identifier: GPL-2.0
/*
 * pcplab-host: the host engine executable. Same protocol as pcplab-native
 * (docs/engine-protocol.md): `pcplab-host resolve|run < spec.json`, JSON
 * on stdout; `pcplab-host workloads` and `pcplab-host keys` (no input) list
 * the workloads and print the spec-key table; exit 0 on success, 2 on bad
 * input (one stderr line, nothing run), 1 on any other failure (one stderr
 * line).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "clock.h"
#include "host.h"

#define HIGH_FRACTION_PATH "/proc/sys/vm/percpu_pagelist_high_fraction"

static char *read_stdin(void)
{
	size_t cap = 4096, len = 0, n;
	char *buf = malloc(cap), *grown;

	while (buf && (n = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
		len += n;
		if (len + 1 == cap) {
			grown = realloc(buf, cap *= 2);
			if (!grown)
				free(buf);
			buf = grown;
		}
	}
	if (buf)
		buf[len] = 0;
	return buf;
}

static int print_json(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	if (!s)
		return 1;
	puts(s);
	cJSON_free(s);
	return fflush(stdout) ? 1 : 0;
}

static int bad_input(const char *err)
{
	fprintf(stderr, "pcplab: error: %s\n", err);
	return 2;
}

static int failure(const char *err)
{
	fprintf(stderr, "pcplab: error: %s\n", err);
	return 1;
}

static void on_signal(int sig)
{
	host_interrupted = sig;
}

/* Catch SIGINT and SIGTERM (no SA_RESTART: sleeps return early). */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* A high_fraction in the spec must be the one in force: the front end sets it. */
static int check_high_fraction(const struct host_spec *s, char *err)
{
	FILE *f;
	int live = -1;

	if (s->high_fraction < 0)
		return 0;
	f = fopen(HIGH_FRACTION_PATH, "r");
	if (f) {
		if (fscanf(f, "%d", &live) != 1)
			live = -1;
		fclose(f);
	}
	if (live == s->high_fraction)
		return 0;
	snprintf(
		err, HOST_ERRLEN,
		"high_fraction %d is not in force (the kernel has %d); the front end sets vm.percpu_pagelist_high_fraction (pcplab run --engine host --high-fraction F, as root)",
		s->high_fraction, live);
	return -1;
}

/* True if pcplab-host runs the workload called @name. */
static bool host_runs(const char *name)
{
	return host_find_workload(name);
}

static int resolve_main(const char *text)
{
	char err[HOST_ERRLEN];
	struct host_spec spec;
	cJSON *o;

	if (host_spec_parse(text, &spec, err))
		return bad_input(err);
	o = host_spec_to_json(&spec);
	cJSON_AddNumberToObject(o, "memory_bytes",
				(double)host_memory_bytes(&spec));
	return print_json(o);
}

static int run_main(const char *text)
{
	char err[HOST_ERRLEN];
	struct host_spec spec;
	struct host_run run;
	pid_t parent = getppid();
	int ret;

	if (host_spec_parse(text, &spec, err) ||
	    check_high_fraction(&spec, err))
		return bad_input(err);
	/* If the front end dies, stop the tasks rather than run on. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		return failure("the front end exited before the run started");
	catch_signals();
	host_clock_init(50);
	memset(&run, 0, sizeof(run));
	if (host_run(&spec, &run, err)) {
		host_run_free(&run);
		return failure(err);
	}
	ret = print_json(host_result_json(&spec, &run));
	host_run_free(&run);
	return ret;
}

int main(int argc, char **argv)
{
	char *text;
	int ret;

	if (argc == 2 && !strcmp(argv[1], "workloads"))
		return workloads_main(WORKLOAD_HOST, host_runs);
	if (argc == 2 && !strcmp(argv[1], "keys"))
		return spec_keys_main();
	if (argc != 2 ||
	    (strcmp(argv[1], "run") && strcmp(argv[1], "resolve"))) {
		fprintf(stderr,
			"pcplab: error: unknown command; usage: pcplab-host run|resolve < spec.json, or pcplab-host workloads|keys\n");
		return 2;
	}
	text = read_stdin();
	if (!text)
		return failure("cannot read the spec from standard input");
	ret = !strcmp(argv[1], "run") ? run_main(text) : resolve_main(text);
	free(text);
	return ret;
}
