// SPDX-License-Identifier: GPL-2.0
/*
 * This host's CPU, from /proc/cpuinfo, and its time stamp counter: used
 * only when invariant (constant_tsc and nonstop_tsc), and calibrated
 * against CLOCK_MONOTONIC rather than trusted from a table.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include <pcplab/hostinfo.h>

/* The first "model name" of /proc/cpuinfo, or "unknown". */
void cpu_model_name(char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		snprintf(buf, len, "%s", colon + 2);
		buf[strcspn(buf, "\n")] = 0;
		break;
	}
	if (f)
		fclose(f);
}

/* Whether the TSC ticks at one rate in every state (usable as a clock). */
bool cpu_has_invariant_tsc(void)
{
	char line[8192];
	bool constant = false, nonstop = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

/* CLOCK_MONOTONIC in nanoseconds. */
u64 clock_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

/*
 * Measure the TSC against CLOCK_MONOTONIC over @ms: @mult is nanoseconds
 * per tick << 32, @hz the tick rate. False (nothing set) if the TSC is not
 * invariant or did not move.
 */
bool tsc_calibrate(unsigned int ms, u64 *mult, double *hz)
{
	struct timespec nap = { .tv_sec = ms / 1000,
				.tv_nsec = (long)(ms % 1000) * 1000000L };
	u64 t0, t1, c0, c1;

	if (!cpu_has_invariant_tsc())
		return false;
	t0 = clock_monotonic_ns();
	c0 = __rdtsc();
	nanosleep(&nap, NULL);
	t1 = clock_monotonic_ns();
	c1 = __rdtsc();
	if (c1 <= c0 || t1 <= t0)
		return false;
	*mult = (u64)(((unsigned __int128)(t1 - t0) << 32) / (c1 - c0));
	if (hz)
		*hz = (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
	return true;
}
