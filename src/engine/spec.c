// SPDX-License-Identifier: GPL-2.0
/*
 * The run spec: parsed from JSON, every key checked against the range the
 * kernel (or the engine) accepts, defaults filled in, and written back out
 * resolved. Bad input gets one message naming what is wrong and what is
 * allowed; nothing runs. The keys, their ranges and defaults are the rows
 * of spec_keys.h; the functions here are for what a row cannot say.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pcplab/engine.h>
#include <pcplab/model_workload.h>
#include <pcplab/spec_keys.h>

_Static_assert(SPEC_MAX_TASKS <= NR_CPUS, "a task is a model CPU");
_Static_assert(ARRAY_SIZE(((struct folio_batch *)0)->pages) >= FOLIO_BATCH_MAX,
	       "a folio_batch holds PAGEVEC_SIZE pages");

/* Where struct spec holds each key (spec_keys.h). */
#define FIELD(member) SPEC_FIELD(struct spec, member)
#define MODEL_FIELD(key, model, host, ...) [SPEC_KEY_##key] = model,
static const struct spec_field spec_fields[NR_SPEC_KEYS] = { SPEC_KEYS(
	MODEL_FIELD) };
#undef MODEL_FIELD

/* This binary's bit in the rows' engines. */
static unsigned int this_engine(void)
{
	return strcmp(PCPLAB_PLATFORM, "sim") ? ENGINE_NATIVE : ENGINE_SIM;
}

static int fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, ERRLEN, fmt, ap);
	va_end(ap);
	return -1;
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

/*
 * The scale-max schedule: [[t_s, value], ...], t_s seconds into the
 * measured phase (0: when measuring starts), not decreasing; entries at
 * one time apply in order, so the last one holds. A value is a scale_max,
 * a time at most the longest duration_s.
 */
static int parse_schedule(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *list = spec_key_value(o, SPEC_KEY_scale_max_schedule);
	const struct spec_key *knob = &spec_keys[SPEC_KEY_scale_max];
	double t_max = spec_keys[SPEC_KEY_duration_s].hi;
	const cJSON *e;

	s->nr_schedule = 0;
	if (!list)
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
		    !(t->valuedouble >= 0 && t->valuedouble <= t_max) ||
		    v->valuedouble < knob->lo || v->valuedouble > knob->hi ||
		    v->valuedouble != floor(v->valuedouble))
			return fail(
				err,
				"scale_max_schedule entries are [seconds into the measured phase 0..%g, scale max %g..%g]",
				t_max, knob->lo, knob->hi);
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

/* The engine, the workload, the kernel generation and the policy, by name. */
static int parse_names(const cJSON *o, struct spec *s, char *err)
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
	if (!spec_key_value(o, SPEC_KEY_relinquish))
		s->relinquish = s->gen->relinquish;
	if (!spec_key_value(o, SPEC_KEY_pagevec_size))
		s->pagevec_size = s->gen->lru_batch;
	if (!spec_key_value(o, SPEC_KEY_folios_put_release))
		s->folios_put_release = s->gen->folios_put_release;

	str = get_str(o, "policy", err, &bad);
	if (bad)
		return -1;
	s->policy = find_pcp_policy(str ? str : "default");
	if (!s->policy)
		return fail(err, "unknown policy '%s'; known: %s", str,
			    pcp_policy_names());
	if (s->policy->needs_high_autotune && !s->gen->high_autotune)
		return fail(
			err,
			"policy %s moves pcp->high between high_min and high_max; give kernel 6.18 or 6.19 (v6.7+)",
			s->policy->name);
	return 0;
}

/* What the knobs' ranges cannot say: which go together, and since when. */
static int check_knobs(const cJSON *o, const struct spec *s, char *err)
{
	if (spec_key_value(o, SPEC_KEY_high) &&
	    spec_key_value(o, SPEC_KEY_high_fraction))
		return fail(
			err,
			"high and high_fraction are exclusive; give one of them");
	/* a row's kernels: the generations that take it (spec_keys.h) */
	for (int i = 0; i < NR_SPEC_KEYS; i++) {
		const struct spec_key *k = &spec_keys[i];

		if (!k->kernels || !spec_key_value(o, i) ||
		    spec_key_in_kernel(i, s->gen->name) ||
		    (i == SPEC_KEY_scale_max_schedule && !s->nr_schedule))
			continue;
		return fail(err, "%s needs kernel %s; %s", k->name, k->kernels,
			    k->since ? k->since : "this generation lacks it");
	}
	return 0;
}

/*
 * The workload's own tasks where the spec names none: a thread's
 * reproducer runs as the thread ran it, capped at the CPUs.
 */
static long long workload_default_tasks(const struct workload *wl,
					const struct spec *s)
{
	if (!wl->default_tasks)
		return engine_default_tasks(s);
	return min(wl->default_tasks, engine_max_tasks(s));
}

/* Tasks (at most the engine's CPUs) and the defaults that depend on others. */
static int parse_sizes(const cJSON *o, struct spec *s, char *err)
{
	const struct workload *wl = find_workload(s->workload);
	long long tasks = workload_default_tasks(wl, s);
	char range[128];

	/* the workload's placement too: a thread's loops ran unpinned */
	if (!spec_key_value(o, SPEC_KEY_placement))
		s->spread = wl->unpinned;

	if (spec_key_int(o, SPEC_KEY_tasks, engine_max_tasks(s), &tasks, err))
		return -1;
	if (!tasks)
		return fail(err, "tasks is required; %s",
			    spec_key_range(SPEC_KEY_tasks, engine_max_tasks(s),
					   range, sizeof(range)));
	s->tasks = (int)tasks;
	if (!spec_key_value(o, SPEC_KEY_warmup_s))
		s->warmup_s = fmin(1.0, s->duration_s / 4);
	if (!spec_key_value(o, SPEC_KEY_memory_mib))
		s->memory_mib = engine_default_memory_mib();
	if (!spec_key_value(o, SPEC_KEY_size_mib))
		s->size_mib = wl->default_size_mib;
	return 0;
}

/* The nodes whose CPUs take tasks, like a cpuset's mems and cpus. */
static int parse_nodes(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *list = spec_key_value(o, SPEC_KEY_nodes);
	const cJSON *n;

	s->node_mask = ~0ULL;
	if (!list)
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
		"high %d is below %s %d (every free past it would take zone->lock); allowed 0 or %d..%.0f",
		s->high, s->batch ? "batch" : "the zone's batch", batch, batch,
		spec_keys[SPEC_KEY_high].hi);
}

/*
 * Cross-CPU free groups tasks of a workload that frees what it maps:
 * cross_free_ratio allocating tasks, then the one that frees their pages.
 */
static int check_cross_free(const cJSON *o, const struct spec *s, char *err)
{
	const struct model_workload *wl = find_model_workload(s->workload);
	int group = s->cross_free_ratio + 1;

	if (!s->cross_free) {
		if (spec_key_value(o, SPEC_KEY_cross_free_ratio))
			return fail(
				err,
				"cross_free_ratio sets how many tasks one freeing task serves; give cross_free true with it, or drop it");
		return 0;
	}
	if (wl->no_cross_free)
		return fail(
			err,
			"cross_free needs a workload that frees what it maps, not %s",
			wl->desc->name);
	if (s->tasks < group || s->tasks % group)
		return fail(
			err,
			"cross_free groups tasks (%d allocate, one frees); give a multiple of %d tasks, not %d",
			s->cross_free_ratio, group, s->tasks);
	return 0;
}

/*
 * The instrument that measured the figures ("instrument"), which the
 * engine must be able to charge (arch_instrument_check()).
 */
static int parse_instrument(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *v = spec_key_value(o, SPEC_KEY_instrument);

	s->instrument.kind = INSTRUMENT_NONE;
	s->instrument.functions = 0;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return fail(err, "instrument must be a string; allowed %s",
			    INSTRUMENT_ALLOWED);
	if (instrument_parse(v->valuestring, &s->instrument, err, ERRLEN))
		return -1;
	/* where 4.18 enables interrupts again is not in the profile's map */
	if (s->instrument.kind == INSTRUMENT_PERF_PROFILE_CPU_CLOCK &&
	    !s->gen->folio_fault)
		return fail(
			err,
			"instrument perf-profile-cpu-clock: the model knows where the kernel enables interrupts again from 6.6 on, not on %s; give kernel 6.6 or later, or instrument perf-profile",
			s->gen->name);
	return arch_instrument_check(&s->instrument, err);
}

/* The workload's own arguments ("args"), checked by the workload. */
static int parse_args(const cJSON *o, struct spec *s, char *err)
{
	const cJSON *args = spec_key_value(o, SPEC_KEY_args);
	const struct model_workload *wl = find_model_workload(s->workload);
	char *text;

	if (!args)
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
	if (spec_json_check(o, text, err) ||
	    spec_keys_check(o, this_engine(), err) ||
	    spec_keys_parse(o, spec_fields, spec, err) ||
	    parse_names(o, spec, err) || parse_schedule(o, spec, err) ||
	    check_knobs(o, spec, err) ||
	    engine_parse_machine(spec_key_value(o, SPEC_KEY_machine), spec,
				 err) ||
	    parse_nodes(o, spec, err) || parse_sizes(o, spec, err) ||
	    check_high(spec, err) || parse_instrument(o, spec, err) ||
	    parse_args(o, spec, err) || check_cross_free(o, spec, err))
		goto out;
	ret = 0;
out:
	cJSON_Delete(o);
	return ret;
}

/*
 * The folio_batch (PAGEVEC_SIZE @pagevec_size) and the release path
 * (@folios_put_release). lru_add fills a folio_batch in every generation.
 * Since 99fbb6bfc16f ("mm: make folios_put() the basis of
 * release_pages()", v6.9-rc1) release_pages() fills one too, and
 * folios_put_refs() takes it off the LRU under one lru_lock hold and hands
 * it to free_unref_folios() at once. Before it, release_pages() relocked
 * lru_lock every SWAP_CLUSTER_MAX pages and freed the whole mmu_gather
 * batch after its LRU work, whatever PAGEVEC_SIZE was. The kernel test
 * robot's retest in that commit's thread
 * (202403151058.7048f6a8-oliver.sang@intel.com) raised PAGEVEC_SIZE from
 * 15 to 31 (900a4f6f4408 there, merged as 9cecde80aae0, v6.9-rc2).
 */
static void apply_folio_batch(struct kernel_gen *gen, int pagevec_size,
			      bool folios_put_release)
{
	gen->lru_batch = pagevec_size;
	gen->folios_put_release = folios_put_release;
	gen->lru_release_batch =
		folios_put_release ? pagevec_size : SWAP_CLUSTER_MAX;
	gen->release_gather =
		folios_put_release ? pagevec_size : MAX_GATHER_BATCH;
}

/* Configure the model's policy (pcp_policy) from a parsed spec. */
void spec_apply_policy(const struct spec *s)
{
	pcp_policy.gen = *s->gen;
	apply_folio_batch(&pcp_policy.gen, s->pagevec_size,
			  s->folios_put_release);
	pcp_policy.batch = s->batch;
	pcp_policy.high = s->high;
	pcp_policy.high_fraction = s->high_fraction;
	pcp_policy.no_free_scaling = s->no_free_scaling;
	pcp_policy.no_alloc_scaling = s->no_alloc_scaling;
	config_debug_list = s->config_debug_list;
	pcp_policy.relinquish = s->relinquish;
	pcp_policy.ops = s->policy;
	pcp_policy.pcp_batch_scale_max = s->scale_max;
	pcp_policy.stat_interval_ms = 1000;
	pcp_policy.min_free_kbytes = s->min_free_kbytes;
	mm_shared_by_threads = s->threads;
}

static void write_schedule(cJSON *o, const struct spec *s)
{
	cJSON *sched = cJSON_AddArrayToObject(o, "scale_max_schedule");

	for (int i = 0; i < s->nr_schedule; i++) {
		cJSON *pair = cJSON_CreateArray();

		cJSON_AddItemToArray(pair,
				     cJSON_CreateNumber(s->schedule[i].t_s));
		cJSON_AddItemToArray(pair,
				     cJSON_CreateNumber(s->schedule[i].value));
		cJSON_AddItemToArray(sched, pair);
	}
}

static void write_nodes(cJSON *o, const struct spec *s)
{
	cJSON *nodes;

	if (s->node_mask == ~0ULL)
		return;
	nodes = cJSON_AddArrayToObject(o, "nodes");
	for (int n = 0; n < 64; n++)
		if (s->node_mask & (1ULL << n))
			cJSON_AddItemToArray(nodes, cJSON_CreateNumber(n));
}

/* The instrument, if the spec names one (none leaves the spec as it was). */
static void write_instrument(cJSON *o, const struct spec *s)
{
	char text[128];

	if (s->instrument.kind == INSTRUMENT_NONE)
		return;
	instrument_format(&s->instrument, text, sizeof(text));
	cJSON_AddStringToObject(o, "instrument", text);
}

/* Add @key's resolved value to @o: its field, or what stands for it. */
static void write_key(cJSON *o, enum spec_key_id key, const struct spec *s)
{
	switch (key) {
	case SPEC_KEY_engine:
		cJSON_AddStringToObject(o, "engine", s->engine);
		break;
	case SPEC_KEY_workload:
		cJSON_AddStringToObject(o, "workload", s->workload);
		break;
	case SPEC_KEY_kernel:
		cJSON_AddStringToObject(o, "kernel", s->gen->name);
		break;
	case SPEC_KEY_policy:
		cJSON_AddStringToObject(o, "policy", s->policy->name);
		break;
	case SPEC_KEY_scale_max_schedule:
		write_schedule(o, s);
		break;
	case SPEC_KEY_machine:
		if (s->machine_name[0])
			cJSON_AddStringToObject(o, "machine", s->machine_name);
		break;
	case SPEC_KEY_args:
		if (s->args_json[0])
			cJSON_AddItemToObject(o, "args",
					      cJSON_Parse(s->args_json));
		break;
	case SPEC_KEY_nodes:
		write_nodes(o, s);
		break;
	case SPEC_KEY_instrument:
		write_instrument(o, s);
		break;
	default:
		spec_key_write(o, key, spec_fields, s);
	}
}

/* The spec with every default filled in, in the table's order. */
cJSON *spec_to_json(const struct spec *s)
{
	cJSON *o = cJSON_CreateObject();

	/* first, where results have always had it (their bytes stay equal) */
	write_key(o, SPEC_KEY_scale_max_schedule, s);
	for (int i = 0; i < NR_SPEC_KEYS; i++)
		if ((spec_keys[i].engines & this_engine()) &&
		    i != SPEC_KEY_scale_max_schedule)
			write_key(o, i, s);
	return o;
}
