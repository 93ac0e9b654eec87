// SPDX-License-Identifier: GPL-2.0
/*
 * The host engine's spec: the rows of spec_keys.h that make sense against
 * the running kernel (engine, workload, tasks, durations, size_mib, mode,
 * placement, high_fraction) plus the host's own (timed, trace_s, sync_fd).
 * The model's knobs are refused by name: the host engine runs this
 * kernel's own PCP.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pcplab/spec_keys.h>

#include "host.h"

/* Where struct host_spec holds each key (spec_keys.h). */
#define FIELD(member) SPEC_FIELD(struct host_spec, member)
#define HOST_FIELD(key, model, host, ...) [SPEC_KEY_##key] = host,
static const struct spec_field host_fields[NR_SPEC_KEYS] = { SPEC_KEYS(
	HOST_FIELD) };
#undef HOST_FIELD

static int fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, HOST_ERRLEN, fmt, ap);
	va_end(ap);
	return -1;
}

/* The engine (this one) and the workload, by name. */
static int parse_names(const cJSON *o, struct host_spec *s, char *err)
{
	const cJSON *v = spec_key_value(o, SPEC_KEY_engine);

	if (v && (!cJSON_IsString(v) || strcmp(v->valuestring, "host")))
		return fail(
			err,
			"this is the host engine, not '%s'; engine must be host",
			cJSON_IsString(v) ? v->valuestring : "?");
	v = spec_key_value(o, SPEC_KEY_workload);
	if (!v)
		return fail(err, "workload is required; known: %s",
			    workload_names(WORKLOAD_HOST));
	if (!cJSON_IsString(v) ||
	    !(s->wl = host_find_workload(v->valuestring))) {
		workload_refusal(cJSON_IsString(v) ? v->valuestring : "?",
				 WORKLOAD_HOST, err, HOST_ERRLEN);
		return -1;
	}
	return 0;
}

/*
 * Tasks (required, unless the workload is a thread's reproducer with its
 * own), and the defaults that depend on others.
 */
static int parse_sizes(const cJSON *o, struct host_spec *s, char *err)
{
	double max_tasks = spec_keys[SPEC_KEY_tasks].hi;
	long long tasks = s->wl->desc->default_tasks;
	char range[128];

	if (!spec_key_value(o, SPEC_KEY_placement))
		s->spread = s->wl->desc->unpinned;
	if (!tasks && !spec_key_value(o, SPEC_KEY_tasks))
		return fail(err, "tasks is required; %s",
			    spec_key_range(SPEC_KEY_tasks, max_tasks, range,
					   sizeof(range)));
	if (spec_key_int(o, SPEC_KEY_tasks, max_tasks, &tasks, err))
		return -1;
	s->tasks = (int)tasks;
	if (!spec_key_value(o, SPEC_KEY_warmup_s))
		s->warmup_s = fmin(1.0, s->duration_s / 4);
	if (!spec_key_value(o, SPEC_KEY_size_mib))
		s->size_mib = s->wl->desc->default_size_mib;
	/* none given: the front end set none, nothing to check in force */
	if (!spec_key_value(o, SPEC_KEY_high_fraction))
		s->high_fraction = -1;
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
	if (!o || !cJSON_IsObject(o))
		fail(err,
		     "the spec is not a JSON object; give {\"workload\": ..., \"tasks\": ...}");
	else if (!spec_json_check(o, text, err) &&
		 !spec_keys_check(o, ENGINE_HOST, err) &&
		 !spec_keys_parse(o, host_fields, spec, err) &&
		 !parse_names(o, spec, err) && !parse_sizes(o, spec, err))
		ret = 0;
	cJSON_Delete(o);
	return ret;
}

/* The spec with every default filled in, in the table's order (host.h). */
cJSON *host_spec_to_json(const struct host_spec *s)
{
	cJSON *o = cJSON_CreateObject();

	for (int i = 0; i < NR_SPEC_KEYS; i++) {
		if (!(spec_keys[i].engines & ENGINE_HOST))
			continue;
		if (i == SPEC_KEY_engine)
			cJSON_AddStringToObject(o, "engine", "host");
		else if (i == SPEC_KEY_workload)
			cJSON_AddStringToObject(o, "workload",
						s->wl->desc->name);
		else
			spec_key_write(o, i, host_fields, s);
	}
	return o;
}

/* Peak bytes of memory the run may hold (host.h). */
u64 host_memory_bytes(const struct host_spec *s)
{
	return s->wl->memory_bytes(s->size_mib << 20, s->tasks);
}
