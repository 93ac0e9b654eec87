// SPDX-License-Identifier: GPL-2.0
/*
 * Choosing and calibrating the cheap clock of clock.h: the TSC is used
 * only when /proc/cpuinfo says it is invariant, and its rate is measured
 * against CLOCK_MONOTONIC rather than trusted from a model table.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"

struct host_clock host_clock = { .tsc = false, .mult = 1ULL << 32, .hz = 1e9 };

static bool invariant_tsc(void)
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

/* Choose the clock and calibrate it over @ms milliseconds. */
void host_clock_init(unsigned int ms)
{
#if HOST_HAVE_TSC
	struct timespec nap = { .tv_sec = ms / 1000,
				.tv_nsec = (long)(ms % 1000) * 1000000L };
	u64 t0, t1, c0, c1;

	if (!invariant_tsc())
		return;
	t0 = mono_ns();
	c0 = __rdtsc();
	nanosleep(&nap, NULL);
	t1 = mono_ns();
	c1 = __rdtsc();
	if (c1 <= c0 || t1 <= t0)
		return;
	host_clock.tsc = true;
	host_clock.mult =
		(u64)(((unsigned __int128)(t1 - t0) << 32) / (c1 - c0));
	host_clock.hz = (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
#else
	(void)ms;
#endif
}
