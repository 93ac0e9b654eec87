/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The model half of a workload (src/workloads/<name>/model.c, see
 * <pcplab/workload.h>): a struct model_workload whose iteration() maps,
 * touches and unmaps memory through the model, counting its ops. The
 * native and sim engines drive every workload through this contract.
 */
#ifndef PCPLAB_MODEL_WORKLOAD_H
#define PCPLAB_MODEL_WORKLOAD_H

#include <cjson/cJSON.h>

#include "mm.h"
#include "random.h"
#include "workload.h"

/*
 * Where a task's CPU stood when a step of the scale-max schedule began:
 * its rmqueue_bulk and free_pcppages_bulk calls and their total time.
 */
struct step_mark {
	u64 count[2], sum_ns[2]; /* rmqueue_bulk, free_pcppages_bulk */
};

/* One task of a run: it runs on (and is) one model CPU. */
struct task {
	int cpu;
	struct task_mm mm;
	unsigned long size_pages; /* the mapping size of one iteration */
	bool start_in_step; /* the first iteration whole too (task_start) */
	u64 ops; /* ops done; read racily by samplers */
	const int *stop; /* set when the run ends (or &stopped) */
	int stopped; /* the task's own stop flag (deadline reached) */
	u64 measure_ns; /* measuring starts here: statistics reset */
	u64 deadline_ns; /* the task stops here (U64_MAX: when told) */
	bool measuring;
	u64 ops_at_measure; /* ops when measuring started */
	u64 ops_at_deadline; /* ops when the deadline was seen */
	u64 ops_at_tick; /* ops at the previous task_tick() */
	u64 *samples; /* ops per second of measuring, if wanted */
	int nr_samples;
	u64 next_vmstat_ns; /* when the vmstat work runs next */
	struct prandom rnd;
	unsigned long iterations;
	struct cross_free_mailbox
		*cross_free; /* its box (a freeing task: all) */
	bool cross_free_consumer; /* frees what its group allocated */
	int nr_cross_free; /* a freeing task's boxes: cross_free[0..nr) */
	int cross_free_next; /* the box it looks at next */
	const u64 *step_ns; /* scale-max schedule: ns into measuring */
	int nr_steps;
	int steps_passed;
	struct step_mark *step_marks; /* [nr_steps], filled as they pass */
};

/* Pages handed from an allocating CPU to a freeing one (cross-CPU free). */
struct cross_free_mailbox {
	spinlock_t lock;
	struct page **pages;
	unsigned long nr; /* 0: empty */
	int closed; /* the producer has stopped */
};

/* How the model runs a workload; the rest is its descriptor's. */
struct model_workload {
	const struct workload *desc;
	/* One iteration; returns 0, or -ENOMEM when memory ran out. */
	int (*iteration)(struct task *t);
	/* Optional: read the spec's "args" (NULL if none); 0 or -1 + @err. */
	int (*configure)(const cJSON *args, char *err);
	/* Pages one op stands for (WORKLOAD_OPS_BOGO: the model counts
	 * pages, stress-ng method steps), or 0 for 1. */
	unsigned int pages_per_op;
	bool no_cross_free; /* cannot hand its pages to another CPU to free */
};

/*
 * Define and register the model half of workload @id, which
 * DEFINE_WORKLOAD(@id, ...) describes in src/workloads/@id/workload.c.
 */
#define DEFINE_MODEL_WORKLOAD(id, ...)                             \
	extern const struct workload id##_workload;                \
	const struct model_workload id##_model_workload = {        \
		.desc = &id##_workload, __VA_ARGS__                \
	};                                                         \
	static const struct model_workload *const id##_model_entry \
	__registry_entry(pcplab_model_workloads) = &id##_model_workload

/* The model half of the workload called @name, or NULL if it has none. */
const struct model_workload *find_model_workload(const char *name);

/* Pages to map this iteration (the first is shorter, see src/workloads/model.c). */
unsigned long iteration_pages(struct task *t);
/* Fault in @nr pages writing @bytes of each; every page is one "page op". */
int fault_in(struct task *t, unsigned long nr, enum fault_kind kind,
	     size_t bytes);
/* The end of an iteration: munmap, or hand the pages to the partner CPU. */
void iteration_unmap(struct task *t);
/* The task's run is over: free what it still holds, on its own CPU. */
void task_exit(struct task *t);
/* The partner loop of a freeing CPU (cross-CPU free). */
int cross_free_consumer_iteration(struct task *t);
/* One iteration of @t: the workload's, or the freeing partner's loop. */
int task_iteration(const struct model_workload *wl, struct task *t);
/* Pair tasks 2k (allocates) and 2k+1 (frees) through mailboxes. */
int cross_free_setup(struct task *tasks, int nr, unsigned long cap, int ratio);
void cross_free_teardown(struct task *tasks, int nr);
/* Periodic per-task work: vmstat decay, measuring start, deadline. */
void task_tick(struct task *t);
/* End @t's measured window: its CPU time so far, then stats_detach(). */
void task_stats_detach(struct task *t);

static inline bool task_should_stop(const struct task *t)
{
	return READ_ONCE(*t->stop);
}

#endif
