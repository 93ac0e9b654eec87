// SPDX-License-Identifier: GPL-2.0
/*
 * The spec's instrument: its text form, parsed and written back
 * (<pcplab/instrument.h>). What an instrument costs is the engine's
 * (src/arch/sim/instrument.c).
 */
#include <stdio.h>
#include <string.h>

#include <pcplab/instrument.h>

const char *const instrument_kind_names[NR_INSTRUMENT_KINDS] = {
	[INSTRUMENT_NONE] = "none",
	[INSTRUMENT_FUNCTION_GRAPH] = "function_graph",
	[INSTRUMENT_FUNCTION_GRAPH_CHILDREN] = "function_graph-children",
	[INSTRUMENT_FUNCLATENCY] = "funclatency",
	[INSTRUMENT_PERF_PROFILE] = "perf-profile",
	[INSTRUMENT_PERF_PROFILE_CPU_CLOCK] = "perf-profile-cpu-clock",
};

const char *const traced_func_names[NR_TRACED_FUNCS] = {
	[TRACED_RMQUEUE_BULK] = "rmqueue_bulk",
	[TRACED_FREE_PCPPAGES_BULK] = "free_pcppages_bulk",
};

static int refuse(char *err, size_t len, const char *text, const char *what)
{
	snprintf(err, len, "instrument '%.80s': %s; allowed %s", text, what,
		 INSTRUMENT_ALLOWED);
	return -1;
}

/* The traced function named @name (@n bytes), or -1. */
static int find_func(const char *name, size_t n)
{
	for (int f = 0; f < NR_TRACED_FUNCS; f++)
		if (strlen(traced_func_names[f]) == n &&
		    !strncmp(traced_func_names[f], name, n))
			return f;
	return -1;
}

/* Parse @text (see <pcplab/instrument.h>) into @out. */
int instrument_parse(const char *text, struct instrument *out, char *err,
		     size_t len)
{
	const char *colon = strchr(text, ':'), *p;
	size_t kind_len = colon ? (size_t)(colon - text) : strlen(text);
	int kind = -1, nr = 0;

	out->kind = INSTRUMENT_NONE;
	out->functions = 0;
	for (int k = 0; k < NR_INSTRUMENT_KINDS; k++)
		if (strlen(instrument_kind_names[k]) == kind_len &&
		    !strncmp(instrument_kind_names[k], text, kind_len))
			kind = k;
	if (kind < 0)
		return refuse(err, len, text, "unknown kind");
	bool takes_functions = kind != INSTRUMENT_NONE &&
			       kind != INSTRUMENT_PERF_PROFILE &&
			       kind != INSTRUMENT_PERF_PROFILE_CPU_CLOCK;
	if (!takes_functions) {
		if (colon)
			return refuse(err, len, text,
				      "this kind traces no named function");
		out->kind = (enum instrument_kind)kind;
		return 0;
	}
	if (!colon || !colon[1])
		return refuse(err, len, text, "name the functions it traces");
	for (p = colon + 1; *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int f = find_func(p, n);

		if (f < 0)
			return refuse(err, len, text,
				      "the model traces no such function");
		if (out->functions & (1U << f))
			return refuse(err, len, text, "a function twice");
		out->functions |= 1U << f;
		nr++;
		p += n;
		if (*p && !*++p)
			return refuse(err, len, text, "a trailing comma");
	}
	if (kind == INSTRUMENT_FUNCLATENCY && nr > 1)
		return refuse(err, len, text,
			      "funclatency probes one function");
	out->kind = (enum instrument_kind)kind;
	return 0;
}

/* Write @in as instrument_parse() reads it. */
void instrument_format(const struct instrument *in, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s", instrument_kind_names[in->kind]);

	for (int f = 0; f < NR_TRACED_FUNCS && n > 0 && (size_t)n < len; f++)
		if (in->functions & (1U << f))
			n += snprintf(
				buf + n, len - (size_t)n, "%c%s",
				n == (int)strlen(
					     instrument_kind_names[in->kind])
					? ':'
					: ',',
				traced_func_names[f]);
}
