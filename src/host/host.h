/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host engine (pcplab-host): the spec it accepts, the harness that
 * runs a workload's tasks against the running kernel, and the result it
 * writes (docs/engine-protocol.md, docs/host-engine.md).
 */
#ifndef PCPLAB_HOST_H
#define PCPLAB_HOST_H

#include <signal.h>

#include <cjson/cJSON.h>

#include <pcplab/host_workload.h>
#include <pcplab/spec_keys.h>

#define HOST_ERRLEN SPEC_ERRLEN
#define HOST_COUNTER_STRIDE \
	256 /* bytes between task counters (will-it-scale) */

/* The host's run spec; spec_keys.h has its keys, and where each is held. */
struct host_spec {
	const struct host_workload *wl;
	int tasks;
	double duration_s; /* measured seconds */
	double warmup_s; /* seconds run before measuring */
	double trace_s; /* seconds of the traced phase after measuring */
	u64 size_mib; /* per-task mapping size */
	bool threads; /* mode "thread": one process, a thread per task */
	bool timed; /* time every first touch */
	bool spread; /* placement "spread": tasks unpinned, the kernel places them */
	int high_fraction; /* in force during the run (set by the front end), -1 unknown */
	int sync_fd; /* the front end's end of a socket for phase changes, or -1 */
};

/* One per-second sample of a phase: ops of all tasks, and min/max per task. */
struct host_sample {
	double t_s; /* seconds since the phase began, at the end of the sample */
	double ops;
	double min, max;
};

struct host_phase_result {
	double seconds;
	double ops;
	double pages;
	int nr_samples;
	struct host_sample *samples;
	struct hist fault_ns; /* merged over tasks */
};

struct host_run {
	struct host_phase_result phase[NR_PHASES];
	int *cpus; /* the CPU of each task, -1 if not pinned */
	int nr_allowed; /* CPUs the engine may run on */
	char file_fs[32]; /* file system of the file-backed workloads' files */
};

/* Set by the SIGINT/SIGTERM handler: the signal that asked us to stop. */
extern volatile sig_atomic_t host_interrupted;

/* Parse and check @text into @spec; 0, or -1 with @err set (bad input). */
int host_spec_parse(const char *text, struct host_spec *spec, char *err);
/* The spec with every default filled in. */
cJSON *host_spec_to_json(const struct host_spec *spec);
/* Peak bytes of memory the run may hold. */
u64 host_memory_bytes(const struct host_spec *spec);

/* Run the workload; 0, or -1 with @err set (a failure, not bad input). */
int host_run(const struct host_spec *spec, struct host_run *run, char *err);
/* Free what host_run() allocated. */
void host_run_free(struct host_run *run);

/* The result document (docs/engine-protocol.md's schema, host fields). */
cJSON *host_result_json(const struct host_spec *spec,
			const struct host_run *run);

#endif
