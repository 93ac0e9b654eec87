// SPDX-License-Identifier: GPL-2.0
/*
 * The native engine: one pinned thread per task, each the model CPU of the
 * same number, running a workload on the model for real time; the main
 * thread warms up, samples ops once a second (as will-it-scale does),
 * applies pcp_batch_scale_max changes on schedule, then checks that every
 * page came back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pcplab/engine.h>
#include <pcplab/hostinfo.h>
#include <pcplab/model_workload.h>
#include "native.h"

struct native_run {
	const struct spec *spec;
	const struct model_workload *wl;
	struct task *tasks;
	pthread_barrier_t start;
	int stop;
	int alloc_failed;
	cpu_set_t allowed;
	int nr_allowed;
};

/* The native engine runs on this host: a machine profile is an error. */
int engine_parse_machine(const cJSON *machine, struct spec *spec, char *err)
{
	if (!machine || cJSON_IsNull(machine))
		return 0;
	snprintf(
		err, ERRLEN,
		"machine profiles are for the sim engine; native runs on this host");
	return -1;
}

/* Native tasks are threads: the user says how many. */
int engine_default_tasks(const struct spec *spec)
{
	return 0;
}

/* At most as many tasks as the model has CPUs. */
int engine_max_tasks(const struct spec *spec)
{
	return NR_CPUS;
}

/* The native model has one node. */
int engine_nr_nodes(void)
{
	return 1;
}

/* The host's memory, the default size of the model's zone. */
unsigned long engine_default_memory_mib(void)
{
	return (unsigned long)sysconf(_SC_PHYS_PAGES) *
		       (unsigned long)sysconf(_SC_PAGESIZE) >>
	       20;
}

/*
 * Peak memory a native run touches: the tasks' mappings, as much again for
 * pages parked on pagesets and reuse slack, the struct pages of the
 * touched sections, and per-CPU statistics.
 */
unsigned long engine_memory_bytes(const struct spec *spec)
{
	unsigned long frames = 2UL * spec->tasks * (spec->size_mib << 20);
	unsigned long memmap = (frames / (PAGES_PER_SECTION * PAGE_SIZE) + 2) *
			       PAGES_PER_SECTION * sizeof(struct page);

	return frames + memmap +
	       (unsigned long)spec->tasks *
		       (sizeof(struct cpu_stats) + sizeof(struct task));
}

/* Whether @spec runs more tasks than this process may use CPUs. */
static bool oversubscribed(const struct spec *spec)
{
	cpu_set_t allowed;

	sched_getaffinity(0, sizeof(allowed), &allowed);
	return spec->tasks > CPU_COUNT(&allowed);
}

/* The machine the run used: this host. */
cJSON *engine_machine_json(const struct spec *spec)
{
	cJSON *o = host_machine_json();
	cJSON_AddNumberToObject(o, "model_cpus", spec->tasks);
	cJSON_AddNumberToObject(o, "nodes", 1);
	cJSON_AddNumberToObject(o, "memory_mib", (double)spec->memory_mib);
	cJSON_AddStringToObject(o, "clock",
				tsc_usable ? "tsc" : "clock_gettime");
	/* Oversubscribed: waiters yield, waits include preempted holders. */
	cJSON_AddStringToObject(o, "lock_wait",
				oversubscribed(spec) ? "spin-yield" : "mcs");
	return o;
}

/* Pin the calling thread to the @n-th CPU the process may use. */
static void pin_to(const struct native_run *run, int n)
{
	cpu_set_t set;
	int want = n % run->nr_allowed, seen = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &run->allowed))
			continue;
		if (seen++ == want) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			pthread_setaffinity_np(pthread_self(), sizeof(set),
					       &set);
			return;
		}
	}
}

static struct native_run *the_run;

static void *task_main(void *arg)
{
	struct task *t = arg;
	struct native_run *run = the_run;

	if (!run->spec->spread) /* unpinned: the host's scheduler places it */
		pin_to(run, t->cpu);
	current_cpu = t->cpu;
	current_stats = cpu_stats_of(t->cpu);
	pthread_barrier_wait(&run->start);
	while (!READ_ONCE(run->stop)) {
		if (task_iteration(run->wl, t)) {
			WRITE_ONCE(run->alloc_failed, 1);
			break;
		}
	}
	task_exit(t);
	return NULL;
}

static u64 total_ops(const struct native_run *run)
{
	u64 sum = 0;

	for (int i = 0; i < run->spec->tasks; i++)
		sum += READ_ONCE(run->tasks[i].ops);
	return sum;
}

static void sleep_ns(u64 ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL),
			       (long)(ns % 1000000000ULL) };

	nanosleep(&ts, NULL);
}

/*
 * The measured window: sample ops every second, apply the scale-max
 * schedule (entry i at schedule_ns[i] after measuring starts, as in the
 * sim engine; the tasks mark each step at the same times), stop at the
 * end. The main thread sleeps until the next of these, 10 ms at most.
 */
static void measure(struct native_run *run, struct run_result *res)
{
	const struct spec *spec = run->spec;
	u64 start, end, next_sample, last_ops, ops0;
	int next_sched = 0;

	sleep_ns((u64)(spec->warmup_s * 1e9));
	start = now_ns();
	for (int i = 0; i < spec->tasks; i++)
		WRITE_ONCE(run->tasks[i].measure_ns, start);
	ops0 = last_ops = total_ops(run);
	end = start + (u64)(spec->duration_s * 1e9);
	next_sample = start + 1000000000ULL;

	for (u64 now = start; now < end && !READ_ONCE(run->alloc_failed);
	     now = now_ns()) {
		u64 wake = min(end, now + 10000000ULL);

		while (next_sched < spec->nr_schedule &&
		       now - start >= spec->schedule_ns[next_sched])
			pcp_batch_scale_max_set(
				spec->schedule[next_sched++].value);
		if (next_sched < spec->nr_schedule)
			wake = min(wake, start + spec->schedule_ns[next_sched]);
		if (now >= next_sample) {
			u64 ops = total_ops(run);

			if (res->nr_samples < MAX_SAMPLES)
				res->samples[res->nr_samples++] =
					ops - last_ops;
			last_ops = ops;
			next_sample += 1000000000ULL;
		}
		wake = min(wake, next_sample);
		if (wake > now)
			sleep_ns(wake - now);
	}
	res->ops = total_ops(run) - ops0;
	res->duration_s = (double)(now_ns() - start) / 1e9;
	WRITE_ONCE(run->stop, 1);
}

static int start_tasks(struct native_run *run, pthread_t *threads, char *err)
{
	const struct spec *spec = run->spec;

	if (spec->cross_free &&
	    cross_free_setup(run->tasks, spec->tasks,
			     (spec->size_mib << 20) / PAGE_SIZE,
			     spec->cross_free_ratio)) {
		snprintf(err, ERRLEN, "no memory for the cross-free mailboxes");
		return -1;
	}
	for (int i = 0; i < spec->tasks; i++) {
		struct task *t = &run->tasks[i];

		t->cpu = i;
		t->size_pages = (spec->size_mib << 20) / PAGE_SIZE;
		t->start_in_step = spec->start_in_step;
		t->stop = &run->stop;
		t->measure_ns = UINT64_MAX;
		t->deadline_ns = UINT64_MAX;
		t->step_ns = spec->schedule_ns;
		t->nr_steps = spec->nr_schedule;
		t->step_marks = calloc((size_t)spec->nr_schedule + 1,
				       sizeof(*t->step_marks));
		if (!t->step_marks) {
			snprintf(err, ERRLEN, "no memory for task %d", i);
			return -1;
		}
		prandom_seed(&t->rnd, spec->seed + (u64)i);
		if (task_mm_init(&t->mm, t->size_pages) ||
		    pthread_create(&threads[i], NULL, task_main, t)) {
			snprintf(err, ERRLEN, "cannot start task %d: %s", i,
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Run @spec on real threads; fill @res. 0, or -1 with @err. */
int engine_run(const struct spec *spec, struct run_result *res, char *err)
{
	struct zone_desc zd = { .node = 0,
				.type = ZONE_NORMAL,
				.managed_pages = spec->memory_mib << 8 };
	struct native_run run = { .spec = spec };
	pthread_t *threads = calloc((size_t)spec->tasks, sizeof(*threads));
	unsigned long held = 0;

	run.wl = find_model_workload(spec->workload);
	run.tasks = calloc((size_t)spec->tasks, sizeof(*run.tasks));
	sched_getaffinity(0, sizeof(run.allowed), &run.allowed);
	run.nr_allowed = CPU_COUNT(&run.allowed);
	native_lock_yields = oversubscribed(spec);
	if (!threads || !run.tasks ||
	    free_area_init(&zd, 1, spec->tasks, NULL) ||
	    native_frames_map(
		    DIV_ROUND_UP(zd.managed_pages, PAGES_PER_SECTION) *
		    PAGES_PER_SECTION)) {
		snprintf(err, ERRLEN, "cannot set up a %lu MiB zone",
			 spec->memory_mib);
		return -1;
	}
	the_run = &run;
	pthread_barrier_init(&run.start, NULL, (unsigned)spec->tasks + 1);
	if (start_tasks(&run, threads, err))
		return -1;
	pthread_barrier_wait(&run.start);
	measure(&run, res);
	for (int i = 0; i < spec->tasks; i++) {
		pthread_join(threads[i], NULL);
		held += task_mm_held(&run.tasks[i].mm);
	}
	res->alloc_failed = run.alloc_failed;

	merge_cpu_stats(&res->total);
	collect_steps(spec, run.tasks, res);
	check_invariants(&res->inv, held);
	drain_all_pages(NULL);
	check_invariants(&res->inv_drained, held);
	if (res->inv_drained.pcp_pages) {
		res->inv_drained.pages_conserved = false;
		snprintf(
			res->inv_drained.violations[0],
			sizeof(res->inv_drained.violations[0]),
			"drain: %lu pages still on pagesets after drain_all_pages",
			res->inv_drained.pcp_pages);
		res->inv_drained.nr_violations++;
	}
	res->memmap_bytes = memmap_bytes();

	cross_free_teardown(run.tasks, spec->tasks);
	for (int i = 0; i < spec->tasks; i++) {
		task_mm_exit(&run.tasks[i].mm);
		free(run.tasks[i].step_marks);
	}
	pthread_barrier_destroy(&run.start);
	native_frames_unmap();
	free(run.tasks);
	free(threads);
	return 0;
}

/* Never asked: the native engine refuses every instrument. */
cJSON *engine_instrument_json(const struct spec *s, const struct run_result *r)
{
	return cJSON_CreateNull();
}

/* Not asked: the native engine writes no perf_profile. */
bool engine_clear_page_erms(void)
{
	return true;
}

bool engine_arm64(void)
{
#ifdef __aarch64__
	return true;
#else
	return false;
#endif
}
