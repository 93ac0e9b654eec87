// SPDX-License-Identifier: GPL-2.0
/*
 * The host harness, after will-it-scale's main.c: host_run() maps the
 * memory shared with the tasks, starts them (tasks.c), opens the start
 * barrier, runs the phases with the front end (phases.c) sampling each
 * second (sampling.c), then stops the tasks and merges their histograms.
 * One file per concern; harness.h is what they share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

volatile sig_atomic_t host_interrupted;

static int setup_harness(struct harness *h, const struct host_spec *spec,
			 struct host_run *run, char *err)
{
	int tasks = spec->tasks, *order = calloc(CPU_SETSIZE, sizeof(int));
	size_t counters_len = (size_t)tasks * HOST_COUNTER_STRIDE;
	size_t hists_len = (size_t)tasks * NR_PHASES * sizeof(struct hist);
	char *mem;

	h->spec = spec;
	h->start_pipe[0] = h->start_pipe[1] = -1;
	h->shared_len = sizeof(struct host_shared) + counters_len + hists_len;
	h->tasks = calloc((size_t)tasks, sizeof(*h->tasks));
	h->pids = calloc((size_t)tasks, sizeof(*h->pids));
	h->threads = calloc((size_t)tasks, sizeof(*h->threads));
	h->prev = calloc((size_t)tasks, sizeof(double));
	h->prev_pages = calloc((size_t)tasks, sizeof(double));
	run->cpus = calloc((size_t)tasks, sizeof(int));
	if (!order || !h->tasks || !h->pids || !h->threads || !h->prev ||
	    !h->prev_pages || !run->cpus) {
		free(order);
		return fail(err, "%s", "out of memory");
	}
	mem = mmap(NULL, h->shared_len, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		free(order);
		return fail(err, "cannot map the shared counters: %s",
			    strerror(errno));
	}
	h->sh = (struct host_shared *)mem;
	h->counters = mem + sizeof(struct host_shared);
	h->hists = (struct hist *)(h->counters + counters_len);
	h->sh->control.phase = PHASE_WARMUP;
	run->nr_allowed = ordered_cpus(order);
	for (int i = 0; i < tasks; i++) {
		struct host_task *t = &h->tasks[i];

		t->id = i;
		t->cpu = run->nr_allowed ? order[i % run->nr_allowed] : -1;
		t->size = (size_t)(spec->size_mib << 20);
		t->page_size = (size_t)sysconf(_SC_PAGESIZE);
		t->fd = -1;
		t->timed = spec->timed;
		t->ops = task_counter(h, i, 0);
		t->pages = host_ops_are_pages(spec->wl) ? t->ops
							: task_counter(h, i, 1);
		t->control = &h->sh->control;
		t->fault_ns = &h->hists[(size_t)i * NR_PHASES];
		run->cpus[i] = t->cpu;
	}
	free(order);
	name_file_fs(run->file_fs, sizeof(run->file_fs));
	if (pipe(h->start_pipe))
		return fail(err, "cannot create the start pipe: %s",
			    strerror(errno));
	return 0;
}

static void free_harness(struct harness *h)
{
	if (h->start_pipe[0] >= 0)
		close(h->start_pipe[0]);
	if (h->start_pipe[1] >= 0)
		close(h->start_pipe[1]);
	if (h->sh)
		munmap(h->sh, h->shared_len);
	free(h->tasks);
	free(h->pids);
	free(h->threads);
	free(h->prev);
	free(h->prev_pages);
}

/* Run the workload (host.h). */
int host_run(const struct host_spec *spec, struct host_run *run, char *err)
{
	struct harness h = { 0 };
	pid_t parent = getpid();
	int ret = -1;

	err[0] = 0;
	if (setup_harness(&h, spec, run, err))
		goto out;
	for (int i = 0; i < spec->tasks; i++) {
		int e = spec->threads ? start_thread(&h, i)
				      : start_process(&h, i, parent);

		if (e) {
			snprintf(err, HOST_ERRLEN, "cannot start task %d: %s",
				 i, strerror(-e));
			goto stop;
		}
		h.started++;
	}
	if (!wait_ready(&h))
		goto stop;
	close(h.start_pipe[1]); /* the start barrier: every task reads EOF */
	h.start_pipe[1] = -1;
	if (run_phases(&h, run, err))
		ret = 0;
stop:
	stop_tasks(&h);
	for (int p = 0; p < NR_PHASES; p++)
		for (int i = 0; i < h.started; i++)
			hist_merge(&run->phase[p].fault_ns,
				   &h.hists[(size_t)i * NR_PHASES + p]);
	if (h.sh && h.sh->failed) {
		snprintf(err, HOST_ERRLEN, "%s", h.sh->error);
		ret = -1;
	} else if (host_interrupted) {
		snprintf(err, HOST_ERRLEN, "interrupted by %s",
			 host_interrupted == SIGINT ? "SIGINT" : "SIGTERM");
		ret = -1;
	} else if (ret && !err[0]) {
		snprintf(err, HOST_ERRLEN, "the run failed");
	}
out:
	free_harness(&h);
	return ret;
}

/* Free what host_run() allocated. */
void host_run_free(struct host_run *run)
{
	for (int p = 0; p < NR_PHASES; p++)
		free(run->phase[p].samples);
	free(run->cpus);
}
