/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host half of a workload (src/workloads/<name>/host.c, see
 * <pcplab/workload.h>), after will-it-scale's tests/X.c files: a struct
 * host_workload whose iteration() maps, touches and unmaps real memory of
 * the running kernel, counting its ops in a counter that the harness
 * samples every second.
 */
#ifndef PCPLAB_HOST_WORKLOAD_H
#define PCPLAB_HOST_WORKLOAD_H

#include <stddef.h>

#include "histogram.h"
#include "workload.h"

/* The phases of a run; fault latencies are recorded per phase. */
enum host_phase {
	PHASE_WARMUP,
	PHASE_MEASURE,
	PHASE_TRACE,
	NR_PHASES,
};

/* State every task reads: written by the harness only at phase changes. */
struct host_control {
	int phase; /* enum host_phase */
	int stop; /* set when the run ends: tasks return promptly */
} __attribute__((aligned(64)));

/* One task: a process or a thread pinned to one CPU. */
struct host_task {
	int id; /* 0 .. tasks - 1 */
	int cpu; /* the CPU it is pinned to, -1 if not pinned */
	size_t size; /* bytes of one mapping */
	size_t page_size;
	int fd; /* the task's own file (file-backed workloads), or -1 */
	bool timed; /* time the first touch of every page */
	volatile u64 *ops; /* this task's counter in the shared page */
	volatile u64 *pages; /* pages first-touched, for pages_per_s */
	struct host_control *control;
	struct hist *fault_ns; /* NR_PHASES histograms, in shared memory */
	unsigned long cycle; /* iterations done, for workloads that vary */
};

/* How pcplab-host runs a workload; the rest is its descriptor's. */
struct host_workload {
	const struct workload *desc;
	/* Bytes of memory the run may hold at its peak, for @tasks tasks. */
	u64 (*memory_bytes)(u64 size, int tasks);
	/* Per-task setup before the start barrier; 0 or -errno. May be NULL. */
	int (*setup)(struct host_task *t);
	/* One map-touch-unmap cycle; 0, or -errno (the run then fails). */
	int (*iteration)(struct host_task *t);
};

/*
 * Define and register the host half of workload @id, which
 * DEFINE_WORKLOAD(@id, ...) describes in src/workloads/@id/workload.c.
 */
#define DEFINE_HOST_WORKLOAD(id, ...)                            \
	extern const struct workload id##_workload;              \
	const struct host_workload id##_host_workload = {        \
		.desc = &id##_workload, __VA_ARGS__              \
	};                                                       \
	static const struct host_workload *const id##_host_entry \
	__registry_entry(pcplab_host_workloads) = &id##_host_workload

/* The host half of the workload called @name, or NULL if it has none. */
const struct host_workload *host_find_workload(const char *name);

/* True if an op is one page first-touched: one counter serves both. */
static inline bool host_ops_are_pages(const struct host_workload *wl)
{
	return wl->desc->ops == WORKLOAD_OPS_PAGES;
}

/* The ops counter counts stress-ng's method steps; ops are >> this. */
static inline unsigned int host_ops_shift(const struct host_workload *wl)
{
	return wl->desc->ops == WORKLOAD_OPS_BOGO ? STRESS_NG_BOGO_SHIFT : 0;
}

/*
 * First-touch every page of [@base, @base + @len) with a write of @value,
 * timing each touch when the task is timed and counting a page (and, for
 * workloads whose ops are pages, an op) per page. Returns the pages touched,
 * fewer than asked when the run is stopping.
 */
size_t touch_pages(struct host_task *t, char *base, size_t len, char value);

/*
 * will-it-scale's iteration: mmap @t->size with @flags (of @fd, or -1),
 * write one byte per page through touch_pages(), munmap. 0 or -errno.
 */
int map_touch_unmap(struct host_task *t, int flags, int fd);

/* Create, size and unlink the task's file of @t->size bytes (will-it-scale's
 * page_fault2/3 setup); 0 or -errno. */
int host_task_file(struct host_task *t);

/* u64 memory_bytes callback: @size bytes per task. */
u64 one_mapping_per_task(u64 size, int tasks);

static inline bool host_stopping(const struct host_task *t)
{
	return __atomic_load_n(&t->control->stop, __ATOMIC_RELAXED);
}

#endif
