// SPDX-License-Identifier: GPL-2.0
/*
 * The host engine's spec: the keys of docs/engine-protocol.md that make
 * sense against the running kernel, plus the host's own (mode, timed,
 * trace_s, sync_fd). The model's knobs are refused by name: the host
 * engine runs this kernel's own PCP.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "host.h"

/*
 * The shortest duration_s, and warmup_s or trace_s other than 0: below a
 * millisecond a phase measures nothing (as the model engines' spec.c).
 */
#define MIN_SECONDS 0.001

static int fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, HOST_ERRLEN, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *const host_keys[] = {
	"engine",   "workload",	     "tasks",	 "duration_s",
	"warmup_s", "trace_s",	     "size_mib", "mode",
	"timed",    "high_fraction", "sync_fd",	 "placement",
};

/* Knobs of the allocator model that the running kernel does not have. */
static const char *const model_keys[] = {
	"kernel",
	"batch",
	"high",
	"scale_max",
	"scale_max_schedule",
	"relinquish",
	"no_free_scaling",
	"memory_mib",
	"min_free_kbytes",
	"seed",
	"machine",
	"args",
};

static int check_keys(const cJSON *o, char *err)
{
	const cJSON *item;

	cJSON_ArrayForEach (item, o) {
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(model_keys); i++)
			if (!strcmp(item->string, model_keys[i]) &&
			    !cJSON_IsNull(item))
				return fail(
					err,
					"%s is a model knob; the host engine runs this kernel's own PCP (use --engine native or sim)",
					item->string);
		for (size_t i = 0; i < ARRAY_SIZE(model_keys); i++)
			known |= !strcmp(item->string, model_keys[i]);
		for (size_t i = 0; i < ARRAY_SIZE(host_keys); i++)
			known |= !strcmp(item->string, host_keys[i]);
		if (!known)
			return fail(
				err,
				"unknown spec key '%s'; the host engine takes engine, workload, tasks, duration_s, warmup_s, trace_s, size_mib, mode, timed, high_fraction, placement",
				item->string);
	}
	return 0;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* Integer @key in [lo, hi] into @out (left alone when absent). */
static int get_int(const cJSON *o, const char *key, double lo, double hi,
		   long long *out, char *err)
{
	const cJSON *v = get(o, key);

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return fail(err, "%s must be an integer; allowed %.0f..%.0f",
			    key, lo, hi);
	if (v->valuedouble < lo || v->valuedouble > hi)
		return fail(err, "%s %.0f is out of range; allowed %.0f..%.0f",
			    key, v->valuedouble, lo, hi);
	*out = (long long)v->valuedouble;
	return 0;
}

/* Seconds @key into @out: 0 (if @zero_ok) or MIN_SECONDS..@hi. */
static int get_seconds(const cJSON *o, const char *key, bool zero_ok, double hi,
		       double *out, char *err)
{
	const cJSON *v = get(o, key);

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return fail(err, "%s must be a number; allowed %s%g..%g", key,
			    zero_ok ? "0 or " : "", MIN_SECONDS, hi);
	if (v->valuedouble > hi ||
	    (v->valuedouble < MIN_SECONDS && !(zero_ok && !v->valuedouble)))
		return fail(err, "%s %g is out of range; allowed %s%g..%g", key,
			    v->valuedouble, zero_ok ? "0 or " : "", MIN_SECONDS,
			    hi);
	*out = v->valuedouble;
	return 0;
}

static int parse_strings(const cJSON *o, struct host_spec *s, char *err)
{
	const cJSON *v = get(o, "engine");

	if (v && (!cJSON_IsString(v) || strcmp(v->valuestring, "host")))
		return fail(
			err,
			"this is the host engine, not '%s'; engine must be host",
			cJSON_IsString(v) ? v->valuestring : "?");
	v = get(o, "workload");
	if (!v)
		return fail(err, "workload is required; known: %s",
			    workload_names(WORKLOAD_HOST));
	if (!cJSON_IsString(v) ||
	    !(s->wl = host_find_workload(v->valuestring))) {
		workload_refusal(cJSON_IsString(v) ? v->valuestring : "?",
				 WORKLOAD_HOST, err, HOST_ERRLEN);
		return -1;
	}
	v = get(o, "mode");
	if (v && (!cJSON_IsString(v) || (strcmp(v->valuestring, "process") &&
					 strcmp(v->valuestring, "thread"))))
		return fail(err, "unknown mode '%s'; allowed process, thread",
			    cJSON_IsString(v) ? v->valuestring : "?");
	s->threads = v && !strcmp(v->valuestring, "thread");
	v = get(o, "timed");
	if (v && !cJSON_IsBool(v))
		return fail(err, "timed must be true or false; allowed %s",
			    "true, false");
	s->timed = !v || cJSON_IsTrue(v);
	v = get(o, "placement");
	if (v && (!cJSON_IsString(v) || (strcmp(v->valuestring, "pinned") &&
					 strcmp(v->valuestring, "spread"))))
		return fail(err,
			    "unknown placement '%s'; allowed pinned, spread",
			    cJSON_IsString(v) ? v->valuestring : "?");
	s->spread = v && !strcmp(v->valuestring, "spread");
	return 0;
}

static int parse_numbers(const cJSON *o, struct host_spec *s, char *err)
{
	long long tasks = 0, size = (long long)s->wl->desc->default_size_mib;
	long long hf = -1, fd = -1;

	if (!get(o, "tasks"))
		return fail(err, "tasks is required; allowed 1..%d",
			    HOST_MAX_TASKS);
	if (get_int(o, "tasks", 1, HOST_MAX_TASKS, &tasks, err))
		return -1;
	s->tasks = (int)tasks;
	s->duration_s = 5.0;
	if (get_seconds(o, "duration_s", false, 86400, &s->duration_s, err))
		return -1;
	s->warmup_s = fmin(1.0, s->duration_s / 4);
	if (get_seconds(o, "warmup_s", true, 3600, &s->warmup_s, err))
		return -1;
	s->trace_s = 0;
	if (get_seconds(o, "trace_s", true, 3600, &s->trace_s, err))
		return -1;
	if (get_int(o, "size_mib", 1, 1 << 20, &size, err))
		return -1;
	s->size_mib = (u64)size;
	if (get_int(o, "high_fraction", -1e18, 1e18, &hf, err))
		return -1;
	if (get(o, "high_fraction") && hf != 0 && (hf < 8 || hf > INT32_MAX))
		return fail(
			err,
			"high_fraction %lld is out of range; vm.percpu_pagelist_high_fraction takes 0 or 8..2147483647",
			hf);
	s->high_fraction = (int)hf;
	if (get_int(o, "sync_fd", 0, 65535, &fd, err))
		return -1;
	s->sync_fd = (int)fd;
	if (s->trace_s > 0 && s->sync_fd < 0)
		return fail(err, "trace_s needs sync_fd; %s",
			    "the front end switches tracing on and off");
	return 0;
}

/* Parse and check @text into @spec (host.h). */
int host_spec_parse(const char *text, struct host_spec *spec, char *err)
{
	cJSON *o = cJSON_Parse(text);
	int ret = -1;

	memset(spec, 0, sizeof(*spec));
	spec->sync_fd = -1;
	if (!o || !cJSON_IsObject(o))
		fail(err,
		     "the spec is not a JSON object; give {\"workload\": ..., \"tasks\": ...}");
	else if (!check_keys(o, err) && !parse_strings(o, spec, err) &&
		 !parse_numbers(o, spec, err))
		ret = 0;
	cJSON_Delete(o);
	return ret;
}

/* The spec with every default filled in (host.h). */
cJSON *host_spec_to_json(const struct host_spec *s)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "engine", "host");
	cJSON_AddStringToObject(o, "workload", s->wl->desc->name);
	cJSON_AddNumberToObject(o, "tasks", s->tasks);
	cJSON_AddNumberToObject(o, "duration_s", s->duration_s);
	cJSON_AddNumberToObject(o, "warmup_s", s->warmup_s);
	cJSON_AddNumberToObject(o, "trace_s", s->trace_s);
	cJSON_AddNumberToObject(o, "size_mib", (double)s->size_mib);
	cJSON_AddStringToObject(o, "mode", s->threads ? "thread" : "process");
	cJSON_AddBoolToObject(o, "timed", s->timed);
	cJSON_AddStringToObject(o, "placement",
				s->spread ? "spread" : "pinned");
	if (s->high_fraction >= 0)
		cJSON_AddNumberToObject(o, "high_fraction", s->high_fraction);
	else
		cJSON_AddNullToObject(o, "high_fraction");
	return o;
}

/* Peak bytes of memory the run may hold (host.h). */
u64 host_memory_bytes(const struct host_spec *s)
{
	return s->wl->memory_bytes(s->size_mib << 20, s->tasks);
}
