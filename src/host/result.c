// SPDX-License-Identifier: GPL-2.0
/*
 * The host engine's result: docs/engine-protocol.md's schema for what user
 * space can measure (throughput, per-second samples, first-touch fault
 * latency), with every kernel-side field null and named in "unavailable".
 * The front end merges the kernel state and the tracing results into it.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <pcplab/hostinfo.h>

#include "clock.h"
#include "host.h"

/* {count, total, avg, p50, p99, max, log2_hist}, or null if empty. */
static cJSON *latency_json(const struct hist *h)
{
	return hist_json(h, true);
}

static cJSON *samples_json(const struct host_phase_result *r)
{
	cJSON *list = cJSON_CreateArray();

	for (int i = 0; i < r->nr_samples; i++) {
		const struct host_sample *s = &r->samples[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "t_s", s->t_s);
		cJSON_AddNumberToObject(o, "ops", s->ops);
		cJSON_AddNumberToObject(o, "min", s->min);
		cJSON_AddNumberToObject(o, "max", s->max);
		cJSON_AddItemToArray(list, o);
	}
	return list;
}

static cJSON *machine_json(const struct host_spec *s, const struct host_run *r)
{
	cJSON *o = host_machine_json();
	cJSON *cpus = cJSON_CreateArray();
	struct utsname u;
	cJSON_AddNumberToObject(o, "allowed_cpus", r->nr_allowed);
	if (!uname(&u))
		cJSON_AddStringToObject(o, "kernel", u.release);
	cJSON_AddNumberToObject(o, "page_size", (double)sysconf(_SC_PAGESIZE));
	cJSON_AddStringToObject(o, "clock",
				host_clock.tsc ? "tsc" : "clock_gettime");
	cJSON_AddNumberToObject(o, "clock_hz", host_clock.hz);
	if (s->wl->setup)
		cJSON_AddStringToObject(o, "file_fs", r->file_fs);
	for (int i = 0; i < s->tasks; i++)
		cJSON_AddItemToArray(cpus, cJSON_CreateNumber(r->cpus[i]));
	cJSON_AddItemToObject(o, "task_cpus", cpus);
	return o;
}

static cJSON *throughput_json(const struct host_spec *s,
			      const struct host_phase_result *r)
{
	cJSON *o = cJSON_CreateObject();
	double secs = r->seconds > 0 ? r->seconds : 1;

	cJSON_AddNumberToObject(o, "ops_per_s", r->ops / secs);
	cJSON_AddNumberToObject(o, "pages_per_s", r->pages / secs);
	cJSON_AddNumberToObject(o, "ops_per_task_per_s",
				r->ops / secs / s->tasks);
	return o;
}

/* The warm-up or traced phase: its length, throughput and samples. */
static cJSON *phase_json(const struct host_spec *s,
			 const struct host_phase_result *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "duration_s", r->seconds);
	cJSON_AddItemToObject(o, "throughput", throughput_json(s, r));
	cJSON_AddItemToObject(o, "samples", samples_json(r));
	cJSON_AddItemToObject(o, "fault_ns", latency_json(&r->fault_ns));
	return o;
}

static void add_unavailable(cJSON *root, const struct host_spec *s)
{
	cJSON *u = cJSON_AddObjectToObject(root, "unavailable");

	if (!s->timed)
		cJSON_AddStringToObject(
			u, "latency_ns.fault",
			"an untimed run (timed: false) takes no first-touch timestamps");
	cJSON_AddStringToObject(
		u, "latency_ns.rmqueue_bulk",
		"kernel-side: the front end times rmqueue_bulk where kprobes or fentry allow it");
	cJSON_AddStringToObject(
		u, "latency_ns.free_pcppages_bulk",
		"kernel-side: the front end times free_pcppages_bulk where kprobes or fentry allow it");
	cJSON_AddStringToObject(
		u, "lock_hold_ns",
		"kernel-side: the front end measures it from kernel tracing where permitted");
	cJSON_AddStringToObject(
		u, "pcp",
		"kernel-side: the front end counts refills and drains from kernel tracing where permitted");
	cJSON_AddStringToObject(
		u, "contention",
		"the share of CPU time spinning on zone->lock and the LRU lock needs perf cycle sampling or lock_stat");
	cJSON_AddStringToObject(
		u, "invariants",
		"the allocator invariants are the model's; the host engine runs the real kernel");
}

/* The result document (host.h). */
cJSON *host_result_json(const struct host_spec *s, const struct host_run *r)
{
	const struct host_phase_result *m = &r->phase[PHASE_MEASURE];
	cJSON *root = cJSON_CreateObject();
	cJSON *lat, *host;

	cJSON_AddStringToObject(root, "engine", "host");
	cJSON_AddItemToObject(root, "spec", host_spec_to_json(s));
	cJSON_AddItemToObject(root, "machine", machine_json(s, r));
	cJSON_AddArrayToObject(root, "pagesets");
	cJSON_AddNumberToObject(root, "duration_s", m->seconds);
	cJSON_AddNumberToObject(root, "tasks", s->tasks);
	cJSON_AddItemToObject(root, "throughput", throughput_json(s, m));
	cJSON_AddNullToObject(root, "contention");
	lat = cJSON_AddObjectToObject(root, "latency_ns");
	cJSON_AddNullToObject(lat, "rmqueue_bulk");
	cJSON_AddNullToObject(lat, "free_pcppages_bulk");
	cJSON_AddItemToObject(lat, "fault", latency_json(&m->fault_ns));
	cJSON_AddNullToObject(root, "lock_hold_ns");
	cJSON_AddNullToObject(root, "pcp");
	cJSON_AddNullToObject(root, "vmstat");
	cJSON_AddItemToObject(root, "samples", samples_json(m));
	cJSON_AddNullToObject(root, "invariants");
	host = cJSON_AddObjectToObject(root, "host");
	cJSON_AddStringToObject(host, "description", s->wl->desc->description);
	cJSON_AddItemToObject(host, "warmup",
			      phase_json(s, &r->phase[PHASE_WARMUP]));
	if (s->trace_s > 0)
		cJSON_AddItemToObject(host, "traced",
				      phase_json(s, &r->phase[PHASE_TRACE]));
	add_unavailable(root, s);
	return root;
}
