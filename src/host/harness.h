/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the harness files share (harness.c runs, tasks.c starts and stops
 * the tasks, sampling.c samples their counters, phases.c talks to the
 * front end): the state of one run and the memory it shares with its
 * tasks. Private to src/host; host.h is the engine's interface.
 */
#ifndef PCPLAB_HOST_HARNESS_H
#define PCPLAB_HOST_HARNESS_H

#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

#include "host.h"

#define NSEC_PER_SEC 1000000000ULL

/* Memory shared by the harness and every task (MAP_SHARED for processes). */
struct host_shared {
	struct host_control control;
	int ready; /* tasks that finished their setup */
	int failed; /* set by the first task that fails */
	char error[HOST_ERRLEN];
};

struct harness {
	const struct host_spec *spec;
	struct host_shared *sh;
	char *counters; /* tasks * HOST_COUNTER_STRIDE */
	struct hist *hists; /* tasks * NR_PHASES */
	size_t shared_len;
	struct host_task *tasks;
	pid_t *pids;
	pthread_t *threads;
	int started;
	int start_pipe[2];
	double *prev; /* per-task ops at the last sample */
	double *prev_pages;
};

static inline volatile u64 *task_counter(struct harness *h, int i, int which)
{
	return (volatile u64 *)(h->counters + (size_t)i * HOST_COUNTER_STRIDE) +
	       which;
}

/* Write a bad-run message to @err; returns -1. */
static inline int fail(char *err, const char *fmt, const char *detail)
{
	snprintf(err, HOST_ERRLEN, fmt, detail);
	return -1;
}

/* tasks.c: the allowed CPUs, one per core first; returns how many. */
int ordered_cpus(int *out);
/* tasks.c: start task @i as a child process; returns 0 or -errno. */
int start_process(struct harness *h, int i, pid_t parent);
/* tasks.c: start task @i as a thread; returns 0 or -errno. */
int start_thread(struct harness *h, int i);
/* tasks.c: wait until every task finished its setup, or one failed. */
bool wait_ready(struct harness *h);
/* tasks.c: stop every task and wait for it. */
void stop_tasks(struct harness *h);
/* sampling.c: run one phase of @seconds, sampling every second. */
bool run_phase(struct harness *h, double seconds, struct host_phase_result *r);
/* phases.c: the phases after the start barrier; false if the run must stop. */
bool run_phases(struct harness *h, struct host_run *run, char *err);
/* workloads.c: name the file system of the file-backed workloads' files. */
void name_file_fs(char *out, size_t len);

#endif
