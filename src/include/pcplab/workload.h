/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The workload contract, after will-it-scale's testcase files. A workload
 * lives in its own directory, src/workloads/<name>/:
 *
 *   workload.c  what it is, written once: DEFINE_WORKLOAD() with its
 *               name, will-it-scale testcase string, default size, what
 *               one op is and which engines run it;
 *   model.c     how the model engines (native, sim) run it: map, touch
 *               and unmap through the model (<pcplab/model_workload.h>);
 *   host.c      how pcplab-host runs it on the running kernel: real mmap,
 *               first touch, munmap (<pcplab/host_workload.h>), if it can.
 *
 * Why three files and not one: the model half is compiled once per
 * platform against the model's headers (mm.h and the platform's inline
 * locks and clocks), and pcplab-host links no model at all, so one file
 * holding both halves would be two files behind #ifdefs. The descriptor
 * needs neither, so every engine links every descriptor: each can list
 * all workloads and refuse the ones it cannot run by name.
 *
 * Nothing lists the workloads by hand. CMake compiles whatever
 * src/workloads/<name>/{workload,model,host}.c exist, and each
 * DEFINE_*WORKLOAD() puts a pointer to its entry in a linker section (the
 * kernel's initcall habit), which the registries walk from
 * __start_<section> to __stop_<section>. A half names its descriptor's
 * symbol, so a half without a descriptor does not link.
 */
#ifndef PCPLAB_WORKLOAD_H
#define PCPLAB_WORKLOAD_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "registry.h"
#include "types.h"

/* The engines a workload runs on. */
enum workload_engines {
	WORKLOAD_MODEL = 1 << 0, /* native and sim: it has a model.c */
	WORKLOAD_HOST = 1 << 1, /* pcplab-host: it has a host.c */
};

/* What one op of a workload is, on every engine. */
enum workload_ops {
	WORKLOAD_OPS_PAGES, /* one page faulted in (first touched) */
	WORKLOAD_OPS_BOGO, /* a stress-ng bogo op: 4096 method steps */
	WORKLOAD_OPS_LOCKS, /* one acquisition of a lock */
};

/* stress-ng counts method steps and reports them >> VM_BOGO_SHIFT. */
#define STRESS_NG_BOGO_SHIFT 12

/* A workload's descriptor: what it is, whichever engine runs it. */
struct workload {
	const char *name;
	const char *description; /* will-it-scale's testcase string */
	unsigned long default_size_mib; /* per-task mapping size */
	/*
	 * A reproducer from a thread runs as the thread ran it: its tasks
	 * (0: one per CPU, as will-it-scale) and whether they are pinned.
	 */
	int default_tasks;
	bool unpinned;
	enum workload_ops ops;
	unsigned int engines; /* enum workload_engines */
};

/*
 * Define the descriptor of workload @id (a C identifier, which is also
 * its name) as the symbol @id_workload, and register it.
 */
#define DEFINE_WORKLOAD(id, ...)                                            \
	const struct workload id##_workload = { .name = #id, __VA_ARGS__ }; \
	static const struct workload *const id##_workload_entry             \
	__registry_entry(pcplab_workloads) = &id##_workload

/* The workload called @name, whichever engines run it, or NULL. */
const struct workload *find_workload(const char *name);
/* "a, b, c": the names of the workloads @engine (MODEL or HOST) runs, sorted. */
const char *workload_names(unsigned int engine);
/* Say in @err why @engine refuses workload @name (unknown, or not here). */
void workload_refusal(const char *name, unsigned int engine, char *err,
		      size_t len);
/* [{name, description, default_size_mib, default_tasks, placement, ops,
 * engines}], sorted by name. */
cJSON *workloads_json(void);
/*
 * The `workloads` command of an engine: check that @engine has a half for
 * exactly the workloads whose descriptors name it (@runs_here says), and
 * print workloads_json(). Returns the exit status.
 */
int workloads_main(unsigned int engine, bool (*runs_here)(const char *name));

#endif
