// SPDX-License-Identifier: GPL-2.0
/*
 * The run spec: parsed from JSON, every key checked against the range the
 * kernel (or the engine) accepts, defaults filled in, and written back out
 * resolved. Bad input gets one message naming what is wrong and what is
 * allowed; nothing runs.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pcplab/engine.h>
#include <pcplab/model_workload.h>

/*
 * The shortest duration_s, and warmup_s other than 0: below a millisecond a
 * run measures nothing (a fault takes microseconds, a sample a second).
 */
#define MIN_SECONDS 0.001

static int fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, ERRLEN, fmt, ap);
	va_end(ap);
	return -1;
}

/* Read integer key @key into @out if present and not null; range-check. */
static int get_int(const cJSON *o, const char *key, long long lo, long long hi,
		   long long *out, bool *present, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*present = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return fail(err, "%s must be an integer; allowed %lld..%lld",
			    key, lo, hi);
	if (v->valuedouble < (double)lo || v->valuedouble > (double)hi)
		return fail(err, "%s %.0f is out of range; allowed %lld..%lld",
			    key, v->valuedouble, lo, hi);
	*out = (long long)v->valuedouble;
	*present = true;
	return 0;
}

static int get_num(const cJSON *o, const char *key, double lo, double hi,
		   bool lo_open, double *out, bool *present, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*present = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v))
		return fail(err, "%s must be a number; allowed %s%g..%g", key,
			    lo_open ? "more than " : "", lo, hi);
	if (v->valuedouble > hi || v->valuedouble < lo ||
	    (lo_open && v->valuedouble <= lo))
		return fail(err, "%s %g is out of range; allowed %s%g..%g", key,
			    v->valuedouble, lo_open ? "more than " : "", lo,
			    hi);
	*out = v->valuedouble;
	*present = true;
	return 0;
}

static const char *get_str(const cJSON *o, const char *key, char *err, int *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	*bad = 0;
	if (!v || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsString(v)) {
		*bad = fail(err, "%s must be a string", key);
		return NULL;
	}
	return v->valuestring;
}

static const char *const spec_keys[] = {
	"engine",
	"workload",
	"tasks",
	"duration_s",
	"warmup_s",
	"kernel",
	"batch",
	"high",
	"high_fraction",
	"scale_max",
	"scale_max_schedule",
	"relinquish",
	"no_free_scaling",
	"memory_mib",
	"size_mib",
	"min_free_kbytes",
	"seed",
	"machine",
	"args",
	"mode",
	"cross_free",
	"nodes",
	"placement",
};

static int check_keys(const cJSON *o, char *err)
{
	const cJSON *item;

	cJSON_ArrayForEach (item, o) {
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(spec_keys); i++)
			known |= !strcmp(item->string, spec_keys[i]);
		if (!known) {
			char allowed[ERRLEN] = "";

			for (size_t i = 0; i < ARRAY_SIZE(spec_keys); i++)
				snprintf(allowed + strlen(allowed),
					 sizeof(allowed) - strlen(allowed),
					 "%s%s", i ? ", " : "", spec_keys[i]);
			return fail(err,
				    "unknown spec key '%s'; allowed: %.400s",
				    item->string, allowed);
		}
	}
	return 0;
}

static const char *const relinquish_names[] = { "off", "contended", "batched" };

/*
 * The scale-max schedule: [[t_s, value], ...], t_s seconds into the
 * measured phase (0: when measuring starts), not decreasing; entries at
 * one time apply in order, so the last one holds.
 */
static int parse_schedule(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *list =
		cJSON_GetObjectItemCaseSensitive(o, "scale_max_schedule");
	const cJSON *e;

	s->nr_schedule = 0;
	if (!list || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > MAX_SCHEDULE)
		return fail(
			err,
			"scale_max_schedule must be a list of at most %d [seconds, value] pairs",
			MAX_SCHEDULE);
	cJSON_ArrayForEach (e, list) {
		const cJSON *t = cJSON_GetArrayItem(e, 0);
		const cJSON *v = cJSON_GetArrayItem(e, 1);
		int n = s->nr_schedule;

		if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 ||
		    !cJSON_IsNumber(t) || !cJSON_IsNumber(v) ||
		    !(t->valuedouble >= 0 && t->valuedouble <= 86400) ||
		    v->valuedouble < 0 || v->valuedouble > 6 ||
		    v->valuedouble != floor(v->valuedouble))
			return fail(
				err,
				"scale_max_schedule entries are [seconds into the measured phase 0..86400, scale max 0..6]");
		if (n && t->valuedouble < s->schedule[n - 1].t_s)
			return fail(
				err,
				"scale_max_schedule time %g comes before %g; give the entries in time order",
				t->valuedouble, s->schedule[n - 1].t_s);
		s->schedule[n].t_s = t->valuedouble;
		s->schedule[n].value = (int)v->valuedouble;
		s->schedule_ns[n] = (u64)llround(t->valuedouble * 1e9);
		s->nr_schedule++;
	}
	return 0;
}

/* The knob's value @ns into the measured phase, by the schedule. */
int schedule_value_at(const struct spec *s, u64 ns)
{
	int value = s->scale_max;

	for (int i = 0; i < s->nr_schedule && s->schedule_ns[i] <= ns; i++)
		value = s->schedule[i].value;
	return value;
}

static int parse_enums(const cJSON *o, struct spec *s, char *err)
{
	const char *str;
	int bad;

	str = get_str(o, "engine", err, &bad);
	if (bad)
		return -1;
	snprintf(s->engine, sizeof(s->engine), "%s",
		 str ? str : PCPLAB_PLATFORM);
	if (strcmp(s->engine, PCPLAB_PLATFORM))
		return fail(err, "this is the %s engine, not '%s'",
			    PCPLAB_PLATFORM, s->engine);

	str = get_str(o, "workload", err, &bad);
	if (bad)
		return -1;
	if (!str)
		return fail(err, "workload is required; known: %s",
			    workload_names(WORKLOAD_MODEL));
	if (!find_model_workload(str)) {
		workload_refusal(str, WORKLOAD_MODEL, err, ERRLEN);
		return -1;
	}
	snprintf(s->workload, sizeof(s->workload), "%s", str);

	str = get_str(o, "kernel", err, &bad);
	if (bad)
		return -1;
	s->gen = find_kernel_gen(str ? str : "6.18");
	if (!s->gen)
		return fail(err, "unknown kernel '%s'; known: %s", str,
			    kernel_gen_names());

	str = get_str(o, "relinquish", err, &bad);
	if (bad)
		return -1;
	s->relinquish = s->gen->relinquish;
	if (str) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(relinquish_names); i++)
			if (!strcmp(str, relinquish_names[i]))
				break;
		if (i == ARRAY_SIZE(relinquish_names))
			return fail(
				err,
				"unknown relinquish policy '%s'; known: off, contended, batched",
				str);
		s->relinquish = (enum relinquish)i;
	}
	return 0;
}

static int parse_knobs(const cJSON *o, struct spec *s, char *err)
{
	long long v;
	bool has, has_high, has_frac;
	const cJSON *b;

	if (get_int(o, "batch", 1, 32767, &v, &has, err))
		return -1;
	s->batch = has ? (int)v : 0;
	if (get_int(o, "high", 0, 1 << 30, &v, &has_high, err))
		return -1;
	s->high = has_high ? (int)v : -1;
	b = cJSON_GetObjectItemCaseSensitive(o, "high_fraction");
	if (b && !cJSON_IsNull(b) &&
	    (!cJSON_IsNumber(b) || b->valuedouble != floor(b->valuedouble)))
		return fail(
			err,
			"high_fraction must be an integer; vm.percpu_pagelist_high_fraction takes 0 or 8..%d",
			INT_MAX);
	if (get_int(o, "high_fraction", LLONG_MIN / 2, LLONG_MAX / 2, &v,
		    &has_frac, err))
		return -1;
	s->high_fraction = has_frac ? (int)v : 0;
	if (has_frac && !high_fraction_valid(v))
		return fail(
			err,
			"high_fraction %lld is out of range; vm.percpu_pagelist_high_fraction takes 0 or 8..%d",
			v, INT_MAX);
	if (has_high && has_frac)
		return fail(
			err,
			"high and high_fraction are exclusive; give one of them");

	if (get_int(o, "scale_max", 0, 6, &v, &has, err))
		return -1;
	s->scale_max = 5;
	if (has) {
		if (!s->gen->high_autotune)
			return fail(
				err,
				"scale_max needs kernel 6.18 or 6.19; pcp_batch_scale_max arrived in v6.7");
		s->scale_max = (int)v;
	}
	if (s->nr_schedule && !s->gen->high_autotune)
		return fail(
			err,
			"scale_max_schedule needs kernel 6.18 or 6.19; pcp_batch_scale_max arrived in v6.7");

	b = cJSON_GetObjectItemCaseSensitive(o, "no_free_scaling");
	if (b && !cJSON_IsNull(b) && !cJSON_IsBool(b))
		return fail(err, "no_free_scaling must be true or false");
	s->no_free_scaling = b && cJSON_IsTrue(b);
	return 0;
}

static int parse_sizes(const cJSON *o, struct spec *s, char *err)
{
	long long v;
	double d;
	bool has;

	if (get_int(o, "tasks", 1, engine_max_tasks(s), &v, &has, err))
		return -1;
	if (!has && !engine_default_tasks(s))
		return fail(err, "tasks is required; allowed 1..%d",
			    engine_max_tasks(s));
	s->tasks = has ? (int)v : engine_default_tasks(s);

	if (get_num(o, "duration_s", MIN_SECONDS, 86400, false, &d, &has, err))
		return -1;
	s->duration_s = has ? d : 5.0;
	if (get_num(o, "warmup_s", 0, 3600, false, &d, &has, err))
		return -1;
	if (has && d > 0 && d < MIN_SECONDS)
		return fail(
			err,
			"warmup_s %g is out of range; allowed 0 or %g..3600", d,
			MIN_SECONDS);
	s->warmup_s = has ? d : fmin(1.0, s->duration_s / 4);

	/* the model's memory map reaches 8 TiB (memmap.c) */
	if (get_int(o, "memory_mib", 16,
		    (long long)(sparse_max_pages() >> (20 - PAGE_SHIFT)), &v,
		    &has, err))
		return -1;
	s->memory_mib = has ? (unsigned long)v : engine_default_memory_mib();
	if (get_int(o, "size_mib", 1, 1 << 20, &v, &has, err))
		return -1;
	s->size_mib = has ? (unsigned long)v
			  : find_workload(s->workload)->default_size_mib;
	if (get_int(o, "min_free_kbytes", 128, 1LL << 32, &v, &has, err))
		return -1;
	s->min_free_kbytes = has ? (unsigned long)v : 0;
	if (get_int(o, "seed", 0, 1LL << 53, &v, &has, err))
		return -1;
	s->seed = has ? (u64)v : 1;
	return 0;
}

/* The nodes whose CPUs take tasks, like a cpuset's mems and cpus. */
static int parse_nodes(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "nodes");
	const cJSON *n;

	s->node_mask = ~0ULL;
	if (!list || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list) || !cJSON_GetArraySize(list))
		return fail(err,
			    "nodes must be a non-empty list of node numbers");
	s->node_mask = 0;
	cJSON_ArrayForEach (n, list) {
		if (!cJSON_IsNumber(n) || n->valuedouble < 0 ||
		    n->valuedouble >= engine_nr_nodes() ||
		    n->valuedouble != floor(n->valuedouble))
			return fail(err, "nodes: %g is no node; allowed 0..%d",
				    cJSON_IsNumber(n) ? n->valuedouble : -1,
				    engine_nr_nodes() - 1);
		if (s->node_mask & (1ULL << (int)n->valuedouble))
			return fail(
				err,
				"nodes: node %d is given twice; give each node of 0..%d once",
				(int)n->valuedouble, engine_nr_nodes() - 1);
		s->node_mask |= 1ULL << (int)n->valuedouble;
	}
	return 0;
}

/*
 * An overridden pcp->high below pcp->batch (the override, or the batch
 * zone_batchsize() gives the run's zones) makes every free past high take
 * zone->lock: the list never holds a batch, and nr_pcp_free() then frees
 * one page at a time (its "PCP disabled or boot pageset" case). The
 * model's range is high 0 (no caching) or at least the batch.
 */
static int check_high(struct spec *s, char *err)
{
	struct kernel_gen saved = pcp_policy.gen;
	struct zone zone;
	int batch = s->batch;

	if (s->high <= 0)
		return 0;
	if (!batch) {
		memset(&zone, 0, sizeof(zone));
		zone.managed_pages = (s->memory_mib << (20 - PAGE_SHIFT)) /
				     engine_nr_nodes();
		pcp_policy.gen = *s->gen;
		batch = zone_batchsize(&zone);
		pcp_policy.gen = saved;
	}
	if (s->high >= batch)
		return 0;
	return fail(
		err,
		"high %d is below %s %d (every free past it would take zone->lock); allowed 0 or %d..%d",
		s->high, s->batch ? "batch" : "the zone's batch", batch, batch,
		1 << 30);
}

/*
 * Where tasks run: "pinned" (will-it-scale: task i on the i-th CPU, the
 * first thread of every core before any second thread, node by node) or
 * "spread" (unpinned tasks, as the scheduler's load balancing places them:
 * over the allowed nodes in turn, idle cores before SMT siblings).
 */
static int parse_placement(const cJSON *o, struct spec *s, char *err)
{
	const char *str;
	int bad;

	str = get_str(o, "placement", err, &bad);
	if (bad)
		return -1;
	if (str && strcmp(str, "pinned") && strcmp(str, "spread"))
		return fail(err,
			    "unknown placement '%s'; known: pinned, spread",
			    str);
	s->spread = str && !strcmp(str, "spread");
	return 0;
}

/* Process or thread mode, and cross-CPU free. */
static int parse_mode(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "cross_free");
	const struct model_workload *wl = find_model_workload(s->workload);
	const char *mode;
	int bad;

	mode = get_str(o, "mode", err, &bad);
	if (bad)
		return -1;
	if (mode && strcmp(mode, "process") && strcmp(mode, "thread"))
		return fail(err, "unknown mode '%s'; known: process, thread",
			    mode);
	s->threads = mode && !strcmp(mode, "thread");
	if (x && !cJSON_IsNull(x) && !cJSON_IsBool(x))
		return fail(err, "cross_free must be true or false");
	s->cross_free = x && cJSON_IsTrue(x);
	if (!s->cross_free)
		return 0;
	if (wl->no_cross_free || wl->configure)
		return fail(
			err,
			"cross_free needs a workload that frees what it maps, not %s",
			wl->desc->name);
	if (s->tasks < 2 || s->tasks % 2)
		return fail(
			err,
			"cross_free pairs tasks (one allocates, one frees); give an even number of tasks, not %d",
			s->tasks);
	return 0;
}

/* The workload's own arguments ("args"), checked by the workload. */
static int parse_args(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "args");
	const struct model_workload *wl = find_model_workload(s->workload);
	char *text;

	if (!args || cJSON_IsNull(args))
		return wl->configure ? wl->configure(NULL, err) : 0;
	if (!cJSON_IsObject(args))
		return fail(err, "args must be an object");
	if (!wl->configure)
		return fail(err, "workload %s takes no args", wl->desc->name);
	text = cJSON_PrintUnformatted(args);
	snprintf(s->args_json, sizeof(s->args_json), "%s", text);
	cJSON_free(text);
	return wl->configure(args, err);
}

/* Parse and validate @text into @spec. Returns 0, or -1 with @err set. */
int spec_parse(const char *text, struct spec *spec, char *err)
{
	cJSON *o = cJSON_Parse(text);
	int ret = -1;

	memset(spec, 0, sizeof(*spec));
	if (!o || !cJSON_IsObject(o)) {
		fail(err,
		     "the spec is not a JSON object; give {\"workload\": ..., \"tasks\": ...}");
		goto out;
	}
	if (check_keys(o, err) || parse_enums(o, spec, err) ||
	    parse_schedule(o, spec, err) || parse_knobs(o, spec, err) ||
	    engine_parse_machine(cJSON_GetObjectItemCaseSensitive(o, "machine"),
				 spec, err) ||
	    parse_nodes(o, spec, err) || parse_placement(o, spec, err) ||
	    parse_sizes(o, spec, err) || check_high(spec, err) ||
	    parse_args(o, spec, err) || parse_mode(o, spec, err))
		goto out;
	ret = 0;
out:
	cJSON_Delete(o);
	return ret;
}

/* Configure the model's policy (pcp_policy) from a parsed spec. */
void spec_apply_policy(const struct spec *s)
{
	pcp_policy.gen = *s->gen;
	pcp_policy.batch = s->batch;
	pcp_policy.high = s->high;
	pcp_policy.high_fraction = s->high_fraction;
	pcp_policy.no_free_scaling = s->no_free_scaling;
	pcp_policy.relinquish = s->relinquish;
	pcp_policy.pcp_batch_scale_max = s->scale_max;
	pcp_policy.stat_interval_ms = 1000;
	pcp_policy.min_free_kbytes = s->min_free_kbytes;
	mm_shared_by_threads = s->threads;
}

/* The spec with every default filled in. */
cJSON *spec_to_json(const struct spec *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *sched = cJSON_AddArrayToObject(o, "scale_max_schedule");

	cJSON_AddStringToObject(o, "engine", s->engine);
	cJSON_AddStringToObject(o, "workload", s->workload);
	cJSON_AddNumberToObject(o, "tasks", s->tasks);
	cJSON_AddNumberToObject(o, "duration_s", s->duration_s);
	cJSON_AddNumberToObject(o, "warmup_s", s->warmup_s);
	cJSON_AddStringToObject(o, "kernel", s->gen->name);
	if (s->batch)
		cJSON_AddNumberToObject(o, "batch", s->batch);
	else
		cJSON_AddNullToObject(o, "batch");
	if (s->high >= 0)
		cJSON_AddNumberToObject(o, "high", s->high);
	else
		cJSON_AddNullToObject(o, "high");
	cJSON_AddNumberToObject(o, "high_fraction", s->high_fraction);
	cJSON_AddNumberToObject(o, "scale_max", s->scale_max);
	for (int i = 0; i < s->nr_schedule; i++) {
		cJSON *pair = cJSON_CreateArray();

		cJSON_AddItemToArray(pair,
				     cJSON_CreateNumber(s->schedule[i].t_s));
		cJSON_AddItemToArray(pair,
				     cJSON_CreateNumber(s->schedule[i].value));
		cJSON_AddItemToArray(sched, pair);
	}
	cJSON_AddStringToObject(o, "relinquish",
				relinquish_names[s->relinquish]);
	cJSON_AddBoolToObject(o, "no_free_scaling", s->no_free_scaling);
	cJSON_AddNumberToObject(o, "memory_mib", (double)s->memory_mib);
	cJSON_AddNumberToObject(o, "size_mib", (double)s->size_mib);
	if (s->min_free_kbytes)
		cJSON_AddNumberToObject(o, "min_free_kbytes",
					(double)s->min_free_kbytes);
	else
		cJSON_AddNullToObject(o, "min_free_kbytes");
	cJSON_AddNumberToObject(o, "seed", (double)s->seed);
	if (s->machine_name[0])
		cJSON_AddStringToObject(o, "machine", s->machine_name);
	if (s->args_json[0])
		cJSON_AddItemToObject(o, "args", cJSON_Parse(s->args_json));
	cJSON_AddStringToObject(o, "mode", s->threads ? "thread" : "process");
	cJSON_AddBoolToObject(o, "cross_free", s->cross_free);
	cJSON_AddStringToObject(o, "placement",
				s->spread ? "spread" : "pinned");
	if (s->node_mask != ~0ULL) {
		cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");

		for (int n = 0; n < 64; n++)
			if (s->node_mask & (1ULL << n))
				cJSON_AddItemToArray(nodes,
						     cJSON_CreateNumber(n));
	}
	return o;
}
