/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The workload contract (after will-it-scale's testcase files): a workload
 * is one small file defining a struct workload whose iteration() maps,
 * touches and unmaps memory through the model, counting its ops. Every
 * engine drives every workload through this contract.
 */
#ifndef PCPLAB_WORKLOAD_H
#define PCPLAB_WORKLOAD_H

#include "mm.h"
#include "random.h"

/* One task of a run: it runs on (and is) one model CPU. */
struct task {
	int cpu;
	struct task_mm mm;
	unsigned long size_pages; /* the mapping size of one iteration */
	u64 ops; /* ops done; read racily by samplers */
	const int *stop; /* set when the run ends */
	const int *epoch; /* bumped when measuring starts */
	int seen_epoch;
	u64 next_vmstat_ns; /* when the vmstat work runs next */
	struct prandom rnd;
};

struct workload {
	const char *name;
	const char *description; /* will-it-scale's testcase string */
	unsigned long default_size_mib; /* per-task mapping size */
	/* One iteration; returns 0, or -ENOMEM when memory ran out. */
	int (*iteration)(struct task *t);
};

extern const struct workload page_fault1_workload;
extern const struct workload mmap_fill_workload;

const struct workload *find_workload(const char *name);
const char *workload_names(void);

/* Fault in @nr pages writing @bytes of each, one op per page. */
int fault_in(struct task *t, unsigned long nr, size_t bytes);
/* Periodic per-task work: the vmstat decay and the measuring epoch. */
void task_tick(struct task *t);

static inline bool task_should_stop(const struct task *t)
{
	return READ_ONCE(*t->stop);
}

#endif
