/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Instruments: how a figure was measured on the kernel, and what the
 * measuring cost the kernel it measured (issue 33). A spec names one
 * (spec key "instrument"): ftrace's function_graph tracer on named
 * functions, as set_ftrace_filter limits it (their entry and return
 * only) or as set_graph_function does (every call nested under them
 * too); bcc funclatency, a kprobe and a kretprobe on one function; LKP's
 * perf-profile, sampling cycles with call graphs, or the same profile
 * sampled by the cpu-clock timer where there is no PMU; or none. The sim engine
 * charges each its cost where the traced kernel pays it
 * (src/arch/sim/instrument.c, docs/machines.md "Instruments"); the native
 * engine runs in real time and takes none.
 */
#ifndef PCPLAB_INSTRUMENT_H
#define PCPLAB_INSTRUMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "types.h"

enum instrument_kind {
	INSTRUMENT_NONE,
	/* function_graph, set_ftrace_filter=F: F's entry and return only */
	INSTRUMENT_FUNCTION_GRAPH,
	/* function_graph, set_graph_function=F: every call under F too */
	INSTRUMENT_FUNCTION_GRAPH_CHILDREN,
	INSTRUMENT_FUNCLATENCY, /* bcc funclatency: kprobe + kretprobe */
	INSTRUMENT_PERF_PROFILE, /* LKP perf-profile: cycles sampling, -g */
	/*
	 * perf record -g on a CPU without a PMU (a VM guest): the cpu-clock
	 * software event, an hrtimer interrupt, which waits while interrupts
	 * are disabled and samples where they are enabled again
	 */
	INSTRUMENT_PERF_PROFILE_CPU_CLOCK,
	NR_INSTRUMENT_KINDS,
};

/* The model's functions an instrument can trace: the kernel's names. */
enum traced_func {
	TRACED_RMQUEUE_BULK,
	TRACED_FREE_PCPPAGES_BULK,
	NR_TRACED_FUNCS,
};

struct instrument {
	enum instrument_kind kind;
	u32 functions; /* bit per enum traced_func */
};

extern const char *const instrument_kind_names[NR_INSTRUMENT_KINDS];
extern const char *const traced_func_names[NR_TRACED_FUNCS];

/* The forms a spec's instrument takes, for the one line of a refusal. */
#define INSTRUMENT_ALLOWED                                                     \
	"none, perf-profile, perf-profile-cpu-clock, function_graph:F[,F...] " \
	"(set_ftrace_filter: "                                                 \
	"F's entry and return), function_graph-children:F[,F...] "             \
	"(set_graph_function: the calls under F too) or funclatency:F, F "     \
	"one of rmqueue_bulk, free_pcppages_bulk"

/*
 * Parse "function_graph:rmqueue_bulk,free_pcppages_bulk",
 * "function_graph-children:rmqueue_bulk", "funclatency:rmqueue_bulk",
 * "perf-profile", "perf-profile-cpu-clock" or "none" into @out.
 * 0, or -1 with one line in @err (@len bytes).
 */
int instrument_parse(const char *text, struct instrument *out, char *err,
		     size_t len);
/* Write @in back in the form instrument_parse() reads. */
void instrument_format(const struct instrument *in, char *buf, size_t len);

#endif
