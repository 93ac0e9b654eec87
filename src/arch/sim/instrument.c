// SPDX-License-Identifier: GPL-2.0
/*
 * Instruments in virtual time: what measuring a figure cost the kernel it
 * measured, charged where that kernel paid it (issue 33; the table of
 * costs and their sources is docs/machines.md, "Instruments").
 *
 *   function_graph  set_ftrace_filter=F: only F is traced. Half a traced
 *                   call's hooks at F's entry, before its timestamp, half
 *                   at its return, after it: the tracer takes calltime at
 *                   the end of its entry hook and rettime at the start of
 *                   its return hook. Nothing inside F is charged.
 *   function_graph-children
 *                   set_graph_function=F: F as above, and each call F
 *                   makes out of line (the model's trace_nested_call()
 *                   sites) traced whole, where it happens: under
 *                   zone->lock, so the hold grows.
 *   funclatency     the kprobe at entry, the kretprobe at return, both
 *                   outside the timed interval (the BPF programs read the
 *                   clock last on entry and first on return).
 *   perf-profile    a sample every PERF_PERIOD_CYCLES cycles of each CPU,
 *                   charged at the CPU's next lock operation: one inside a
 *                   hold (due at its release) lengthens the hold; one that
 *                   falls while the CPU spins hides in the spin.
 *   perf-profile-cpu-clock
 *                   the same, a sample every 1/CPU_CLOCK_HZ of each CPU's
 *                   time; where the samples land is perf_profile.c's.
 *
 * The costs are the same on every machine: the published figures name no
 * clock to scale them by (docs/machines.md). They are not constants of
 * the fit: a run without an instrument charges nothing, so a refit can
 * take the tracer out of the figures it measured.
 */
#include <math.h>

#include <pcplab/mm.h>
#include "sim.h"

/*
 * function_graph: entry and return hooks of one traced call, ns. Andrii
 * Nakryiko's BPF selftests bench on fprobe over function_graph's
 * machinery: kretprobe-multi 13.436 M calls/s with a no-op program ("Re:
 * [PATCH v15 00/19] tracing: fprobe: function_graph: Multi-function graph
 * and fprobe on fgraph", 2024-09-18). The tracer's two ring-buffer events
 * per call are not in it: no published per-event figure was found, so
 * this is a lower bound.
 */
#define FGRAPH_CALL_NS (1e3 / 13.436)
/* bcc funclatency's kprobe hit, ns: trig-kprobe 25.052 M/s (ibid.). */
#define KPROBE_NS (1e3 / 25.052)
/* ... its kretprobe (the entry hijack and the return), 10.724 M/s (ibid.). */
#define KRETPROBE_NS (1e3 / 10.724)
/*
 * LKP perf-profile: perf record -a -g -e cycles:pp --count=1000003
 * (lkp-tests programs/perf-profile): a sample per 1000003 cycles per CPU.
 */
#define PERF_PERIOD_CYCLES 1000003.0
/*
 * perf record without -c or -F: a frequency of 4000 samples per second
 * (tools/perf/builtin-record.c, record.freq), what the cpu-clock event of
 * a guest without a PMU then samples at.
 */
#define CPU_CLOCK_HZ 4000.0
/*
 * One sample with its call chain, ns: an estimate, not a measurement (none
 * was found published): the kernel's own budget per sample at its
 * defaults, perf_cpu_time_max_percent 25 of perf_event_max_sample_rate
 * 100000 per second (kernel/events/core.c lowers the rate when samples
 * take longer). A profile's [costs] perf_sample_ns replaces it where it
 * was measured (pcplab calibrate: a guest's sample is a timer interrupt,
 * whose cost is its hypervisor's).
 */
#define PERF_SAMPLE_NS 2500.0

/* The cost of one perf sample on this run's machine, ns. */
static double perf_sample_ns(void)
{
	return sim_machine.perf_sample_ns >= 0 ? sim_machine.perf_sample_ns
					       : PERF_SAMPLE_NS;
}

u32 sim_traced_funcs;
bool sim_traces_nested;
u64 sim_perf_period;

static struct {
	enum instrument_kind kind;
	u64 entry_ps, return_ps; /* a traced function's hooks */
	u64 nested_ps; /* a call function_graph traces under one */
	u64 sample_ps; /* one perf sample */
} instr;

static u64 ns_to_ps(double ns)
{
	return (u64)llround(ns * 1000.0);
}

/* The sim charges any instrument. */
int arch_instrument_check(const struct instrument *in, char *err)
{
	return 0;
}

/*
 * Arm @in for a run whose machine costs are derived (the clock sets the
 * sampling period); every CPU's first sample at its own phase of it.
 */
void sim_instrument_start(const struct instrument *in)
{
	u64 call = ns_to_ps(FGRAPH_CALL_NS);

	instr.kind = in->kind;
	sim_traced_funcs = 0;
	sim_traces_nested = false;
	sim_perf_period = 0;
	switch (in->kind) {
	case INSTRUMENT_FUNCTION_GRAPH:
	case INSTRUMENT_FUNCTION_GRAPH_CHILDREN:
		sim_traced_funcs = in->functions;
		sim_traces_nested =
			in->kind == INSTRUMENT_FUNCTION_GRAPH_CHILDREN;
		instr.entry_ps = call / 2;
		instr.return_ps = call - call / 2;
		instr.nested_ps = call;
		break;
	case INSTRUMENT_FUNCLATENCY:
		sim_traced_funcs = in->functions;
		instr.entry_ps = ns_to_ps(KPROBE_NS);
		instr.return_ps = ns_to_ps(KRETPROBE_NS);
		break;
	case INSTRUMENT_PERF_PROFILE:
	case INSTRUMENT_PERF_PROFILE_CPU_CLOCK:
		sim_perf_period =
			in->kind == INSTRUMENT_PERF_PROFILE
				? (u64)llround(PERF_PERIOD_CYCLES * 1000.0 /
					       sim_machine.clock_ghz)
				: ns_to_ps(1e9 / CPU_CLOCK_HZ);
		instr.sample_ps = ns_to_ps(perf_sample_ns());
		for (int cpu = 0; cpu < sim_machine.nr_cpus; cpu++)
			sim_vcpu(cpu)->next_sample = sim_perf_period *
						     (u64)(cpu + 1) /
						     (u64)sim_machine.nr_cpus;
		break;
	default:
		break;
	}
}

/* Spend @ps of the running CPU's time on the instrument. */
static void charge(struct vcpu_hot *v, u64 ps, bool locked)
{
	v->clock += ps;
	v->prof[PROF_INSTRUMENT] += ps;
	v->stats->events[INSTR_CHARGED_PS] += ps;
	if (locked)
		v->stats->events[INSTR_LOCKED_PS] += ps;
}

/* A traced function's entry hook; -children then traces its calls. */
void sim_trace_entry(enum traced_func fn)
{
	struct vcpu_hot *v = current_vcpu;

	v->stats->events[INSTR_PROBE_HITS]++;
	charge(v, instr.entry_ps, false);
	if (sim_traces_nested)
		v->fgraph_depth++;
}

/* A traced function's return hook. */
void sim_trace_return(enum traced_func fn)
{
	struct vcpu_hot *v = current_vcpu;

	if (sim_traces_nested)
		v->fgraph_depth--;
	v->stats->events[INSTR_PROBE_HITS]++;
	charge(v, instr.return_ps, false);
}

/* A call function_graph-children traces under F: zone->lock held. */
void sim_trace_nested(void)
{
	struct vcpu_hot *v = current_vcpu;

	v->stats->events[INSTR_NESTED_CALLS]++;
	charge(v, instr.nested_ps, true);
}

/* Charge the perf samples due by @me's clock (@locked: inside a zone hold). */
void sim_perf_due(struct vcpu *me, bool locked)
{
	while (me->hot.clock >= me->next_sample) {
		me->next_sample += sim_perf_period;
		me->hot.stats->events[INSTR_SAMPLES]++;
		charge(&me->hot, instr.sample_ps, locked);
	}
}

/* The samples that fell while @me spun for a lock: the spin hid them. */
void sim_perf_absorb(struct vcpu *me)
{
	while (me->hot.clock >= me->next_sample) {
		me->next_sample += sim_perf_period;
		me->hot.stats->events[INSTR_SAMPLES_SPUN]++;
	}
}

/* The result's "instrument": what was used, its costs, what they came to. */
cJSON *engine_instrument_json(const struct spec *s, const struct run_result *r)
{
	const struct instrument *in = &s->instrument;
	const struct cpu_stats *total = &r->total;
	cJSON *o = cJSON_CreateObject(), *fns, *c;
	char text[128];
	double busy = r->duration_s * 1e9 * s->tasks;

	instrument_format(in, text, sizeof(text));
	cJSON_AddStringToObject(o, "instrument", text);
	cJSON_AddStringToObject(o, "kind", instrument_kind_names[in->kind]);
	fns = cJSON_AddArrayToObject(o, "functions");
	for (int f = 0; f < NR_TRACED_FUNCS; f++)
		if (in->functions & (1U << f))
			cJSON_AddItemToArray(
				fns, cJSON_CreateString(traced_func_names[f]));
	c = cJSON_AddObjectToObject(o, "costs_ns");
	if (in->kind == INSTRUMENT_FUNCTION_GRAPH) {
		cJSON_AddNumberToObject(c, "traced_call", FGRAPH_CALL_NS);
	} else if (in->kind == INSTRUMENT_FUNCTION_GRAPH_CHILDREN) {
		cJSON_AddNumberToObject(c, "traced_call", FGRAPH_CALL_NS);
		cJSON_AddNumberToObject(c, "nested_call", FGRAPH_CALL_NS);
	} else if (in->kind == INSTRUMENT_FUNCLATENCY) {
		cJSON_AddNumberToObject(c, "kprobe", KPROBE_NS);
		cJSON_AddNumberToObject(c, "kretprobe", KRETPROBE_NS);
	} else if (in->kind == INSTRUMENT_PERF_PROFILE ||
		   in->kind == INSTRUMENT_PERF_PROFILE_CPU_CLOCK) {
		cJSON_AddNumberToObject(c, "sample", perf_sample_ns());
		cJSON_AddStringToObject(
			c, "sample_source",
			sim_machine.perf_sample_ns >= 0
				? "measured ([costs] perf_sample_ns)"
				: "estimate");
		cJSON_AddNumberToObject(c, "period",
					(double)sim_perf_period / 1000.0);
	}
	cJSON_AddNumberToObject(o, "probe_hits",
				(double)total->events[INSTR_PROBE_HITS]);
	cJSON_AddNumberToObject(o, "nested_calls",
				(double)total->events[INSTR_NESTED_CALLS]);
	cJSON_AddNumberToObject(o, "samples",
				(double)total->events[INSTR_SAMPLES]);
	cJSON_AddNumberToObject(o, "samples_while_spinning",
				(double)total->events[INSTR_SAMPLES_SPUN]);
	cJSON_AddNumberToObject(o, "charged_ns",
				(double)total->events[INSTR_CHARGED_PS] /
					1000.0);
	cJSON_AddNumberToObject(o, "charged_under_zone_lock_ns",
				(double)total->events[INSTR_LOCKED_PS] /
					1000.0);
	cJSON_AddNumberToObject(
		o, "charged_pct_of_cpu_time",
		busy > 0 ? 100.0 * (double)total->events[INSTR_CHARGED_PS] /
				   1000.0 / busy
			 : 0);
	return o;
}
