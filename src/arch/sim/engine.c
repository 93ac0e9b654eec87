// SPDX-License-Identifier: GPL-2.0
/*
 * The sim engine: the machine of a profile, one virtual CPU per task (task
 * i on CPU i, cores before SMT siblings, like will-it-scale), every
 * workload driving the same allocator model in virtual time. Nothing
 * depends on the host: the same spec and seed give the same result.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/engine.h>
#include <pcplab/model_workload.h>
#include "sim.h"

static const struct model_workload *run_wl;
static int run_alloc_failed;

/* Read the machine profile; the sim engine cannot run without one. */
int engine_parse_machine(const cJSON *machine, struct spec *spec, char *err)
{
	if (!machine || cJSON_IsNull(machine)) {
		snprintf(
			err, ERRLEN,
			"the sim engine needs a machine profile; see 'pcplab machines'");
		return -1;
	}
	if (sim_machine_parse(machine, err))
		return -1;
	snprintf(spec->machine_name, sizeof(spec->machine_name), "%s",
		 sim_machine.name);
	return 0;
}

/*
 * The CPUs that take tasks, in order. Pinned (will-it-scale): the allowed
 * CPUs in Linux's numbering, first threads of every core before second
 * threads. Spread (unpinned tasks): the scheduler balances nodes, so the
 * allowed nodes take tasks in turn, each its idle cores before siblings.
 */
static int placement(const struct spec *spec, int *cpus)
{
	int per_node[MAX_NUMNODES] = { 0 }, taken[MAX_NUMNODES] = { 0 };
	int n = 0, nodes = sim_machine.numa_nodes;

	for (int c = 0; c < sim_machine.nr_cpus; c++)
		if (spec->node_mask & (1ULL << cpu_node_of(c))) {
			if (cpus && !spec->spread)
				cpus[n] = c;
			per_node[cpu_node_of(c)]++;
			n++;
		}
	if (!cpus || !spec->spread)
		return n;
	for (int i = 0; i < n;) {
		for (int node = 0; node < nodes; node++) {
			int seen = 0;

			if (taken[node] == per_node[node])
				continue;
			for (int c = 0; c < sim_machine.nr_cpus; c++)
				if (cpu_node_of(c) == node &&
				    seen++ == taken[node]) {
					cpus[i++] = c;
					break;
				}
			taken[node]++;
		}
	}
	return n;
}

/*
 * How loaded the machine is for @spec: the most tasks any node runs (they
 * share its zone and its LLC), and the largest share of a socket's cores
 * that run a task (it sets how far above its base clock a socket turbos).
 */
static void machine_load(const struct spec *spec, int *tasks_per_node,
			 double *busy_share)
{
	int *cpus = calloc((size_t)sim_machine.nr_cpus, sizeof(int));
	int *core_busy = calloc((size_t)sim_machine.nr_cpus, sizeof(int));
	int count[MAX_NUMNODES] = { 0 }, busy[64] = { 0 };

	*tasks_per_node = 1;
	*busy_share = 1.0;
	if (!cpus || !core_busy)
		goto out;
	placement(spec, cpus);
	*busy_share = 0;
	for (int i = 0; i < spec->tasks; i++) {
		int c = cpus[i], s = cpu_socket(c);

		*tasks_per_node = max(*tasks_per_node, ++count[cpu_node_of(c)]);
		if (!core_busy[cpu_core(c)]++)
			busy[s]++;
		*busy_share =
			fmax(*busy_share,
			     (double)busy[s] / sim_machine.cores_per_socket);
	}
out:
	free(cpus);
	free(core_busy);
}

/* Derive the machine's costs for the load of @spec. */
static void derive_for(const struct spec *spec)
{
	int per_node;
	double busy;

	machine_load(spec, &per_node, &busy);
	sim_machine_derive(spec->gen, per_node, busy, spec->size_mib);
}

/* One task per CPU of the allowed nodes, unless the spec says otherwise. */
int engine_default_tasks(const struct spec *spec)
{
	return placement(spec, NULL);
}

/* No more tasks than the allowed nodes have CPUs. */
int engine_max_tasks(const struct spec *spec)
{
	return placement(spec, NULL);
}

/* The machine's NUMA nodes. */
int engine_nr_nodes(void)
{
	return sim_machine.numa_nodes;
}

/* The machine's memory. */
unsigned long engine_default_memory_mib(void)
{
	return (unsigned long)(sim_machine.memory_gb * 1024);
}

/*
 * Host memory a sim run needs: the struct pages of the sections its tasks
 * touch (each zone grows a section at a time), coroutine stacks (a few
 * pages of each touched), and per-CPU statistics and pagesets.
 */
unsigned long engine_memory_bytes(const struct spec *spec)
{
	unsigned long touched = 2UL * spec->tasks * (spec->size_mib << 20);
	unsigned long sections = touched / (PAGES_PER_SECTION * PAGE_SIZE) +
				 (unsigned long)sim_machine.numa_nodes * 2;

	return sections * PAGES_PER_SECTION * sizeof(struct page) +
	       (unsigned long)spec->tasks * (32 << 10) +
	       (unsigned long)sim_machine.nr_cpus *
		       (sizeof(struct cpu_stats) +
			MAX_NR_ZONES * (sizeof(struct per_cpu_pages) +
					PCP_RECENT * sizeof(u32))) +
	       (64UL << 20);
}

/* The simulated machine, its costs derived for @spec. */
cJSON *engine_machine_json(const struct spec *spec)
{
	derive_for(spec);
	return sim_machine_json();
}

static void task_main(void *arg)
{
	struct task *t = arg;

	while (!t->stopped) {
		if (task_iteration(run_wl, t)) {
			run_alloc_failed = 1;
			break;
		}
	}
	if (!t->ops_at_deadline)
		t->ops_at_deadline = t->ops;
	task_exit(t);
}

/* The cost table of @cpu: slower when its SMT sibling also runs a task. */
static void set_costs(struct vcpu *v, const int *cpus, int tasks)
{
	int sib = cpu_sibling(v->hot.id);
	double f = 1.0;

	for (int i = 0; i < tasks && sib != v->hot.id; i++)
		if (cpus[i] == sib)
			f = sim_machine.smt_factor;

	for (int k = 0; k < NR_COST_KINDS; k++)
		v->cost[k] = (u64)((double)sim_machine.cost[k] * f + 0.5);
	/*
	 * The varying share is of the whole fault the constants fit, the
	 * bare trap taken out of it included: naming where the fault's time
	 * goes leaves each fault's time as it was (to a picosecond).
	 */
	v->hot.fault_var = min((u64)((double)(v->cost[COST_FAULT_BASE] +
					      sim_machine.fault_bare_ps * f) *
				     sim_machine.work_cv),
			       v->cost[COST_FAULT_BASE]);
	v->hot.fault_fixed = v->cost[COST_FAULT_BASE] - v->hot.fault_var;
}

static int build_memory(const struct spec *spec, char *err)
{
	int nodes = sim_machine.numa_nodes, cpus = sim_machine.nr_cpus;
	struct zone_desc zd[MAX_NUMNODES];
	int *cpu_node = calloc((size_t)cpus, sizeof(int));

	if (!cpu_node)
		return -1;
	for (int n = 0; n < nodes; n++) {
		zd[n].node = n;
		zd[n].type = ZONE_NORMAL;
		zd[n].managed_pages = (spec->memory_mib << 8) / nodes;
	}
	for (int c = 0; c < cpus; c++)
		cpu_node[c] = cpu_node_of(c);
	if (free_area_init(zd, nodes, cpus, cpu_node) || sim_init(cpus)) {
		snprintf(err, ERRLEN, "cannot build a %lu MiB machine",
			 spec->memory_mib);
		free(cpu_node);
		return -1;
	}
	free(cpu_node);
	return 0;
}

/*
 * The scale-max schedule in virtual time: entry i at schedule_ns[i] into
 * the measured phase, which starts at @measure ns on every CPU's clock
 * (the native engine counts from the start of measuring too).
 */
static void schedule_scale_max(const struct spec *spec, u64 measure)
{
	u64 at[MAX_SCHEDULE];
	int values[MAX_SCHEDULE];

	for (int i = 0; i < spec->nr_schedule; i++) {
		at[i] = (measure + spec->schedule_ns[i]) * 1000;
		values[i] = spec->schedule[i].value;
	}
	sim_scale_max_schedule(at, values, spec->nr_schedule);
}

/* Run @spec on the simulated machine; fill @res. 0, or -1 with @err. */
int engine_run(const struct spec *spec, struct run_result *res, char *err)
{
	u64 measure = (u64)(spec->warmup_s * 1e9);
	u64 deadline = measure + (u64)(spec->duration_s * 1e9);
	int nr_samples = (int)(spec->duration_s + 0.999999);
	struct task *tasks;
	unsigned long held = 0;
	int *cpus = calloc((size_t)sim_machine.nr_cpus, sizeof(int));

	if (build_memory(spec, err))
		return -1;
	run_wl = find_model_workload(spec->workload);
	run_alloc_failed = 0;
	tasks = calloc((size_t)spec->tasks, sizeof(*tasks));
	if (!tasks || !cpus)
		return -1;
	derive_for(spec);
	dram_init();
	sim_instrument_start(&spec->instrument);
	placement(spec, cpus);
	schedule_scale_max(spec, measure);
	nr_samples = min(nr_samples, MAX_SAMPLES);
	if (spec->cross_free &&
	    cross_free_setup(tasks, spec->tasks,
			     (spec->size_mib << 20) / PAGE_SIZE,
			     spec->cross_free_ratio))
		return -1;
	for (int i = 0; i < spec->tasks; i++) {
		struct task *t = &tasks[i];
		struct vcpu *v = sim_vcpu(cpus[i]);

		t->cpu = cpus[i];
		t->size_pages = (spec->size_mib << 20) / PAGE_SIZE;
		t->start_in_step = spec->start_in_step;
		t->stop = &t->stopped;
		t->measure_ns = measure;
		t->deadline_ns = deadline;
		t->nr_samples = nr_samples;
		t->samples = calloc((size_t)nr_samples + 1, sizeof(u64));
		t->step_ns = spec->schedule_ns;
		t->nr_steps = spec->nr_schedule;
		t->step_marks = calloc((size_t)spec->nr_schedule + 1,
				       sizeof(*t->step_marks));
		prandom_seed(&t->rnd, spec->seed * 1000003ULL + (u64)i);
		if (!t->samples || !t->step_marks ||
		    task_mm_init(&t->mm, t->size_pages))
			return -1;
		set_costs(v, cpus, spec->tasks);
		v->hot.jitter_rng = prandom_u64(&t->rnd) | 1;
		sim_start(v, task_main, t);
	}
	sim_run();

	for (int i = 0; i < spec->tasks; i++) {
		struct task *t = &tasks[i];

		res->ops += t->ops_at_deadline - t->ops_at_measure;
		for (int s = 0; s < nr_samples; s++)
			res->samples[s] += t->samples[s];
		held += task_mm_held(&t->mm);
	}
	res->nr_samples = nr_samples;
	res->duration_s = spec->duration_s;
	res->alloc_failed = run_alloc_failed;

	merge_cpu_stats(&res->total);
	collect_steps(spec, tasks, res);
	/* the knob as the run left it, for the drain below */
	sim_scale_max_schedule(NULL, NULL, 0);
	pcp_batch_scale_max_set(
		schedule_value_at(spec, (u64)(spec->duration_s * 1e9)));
	check_invariants(&res->inv, held);
	drain_all_pages(NULL);
	check_invariants(&res->inv_drained, held);
	res->memmap_bytes = memmap_bytes();

	cross_free_teardown(tasks, spec->tasks);
	for (int i = 0; i < spec->tasks; i++) {
		task_mm_exit(&tasks[i].mm);
		free(tasks[i].samples);
		free(tasks[i].step_marks);
	}
	free(tasks);
	free(cpus);
	sim_exit();
	return 0;
}
