// SPDX-License-Identifier: GPL-2.0
/*
 * Choosing and calibrating the cheap clock of clock.h: the TSC is used
 * only when /proc/cpuinfo says it is invariant, and its rate is measured
 * against CLOCK_MONOTONIC rather than trusted from a model table.
 */
#include <stdio.h>
#include <string.h>

#include <pcplab/hostinfo.h>

#include "clock.h"

struct host_clock host_clock = { .tsc = false, .mult = 1ULL << 32, .hz = 1e9 };

/* Choose the clock and calibrate it over @ms milliseconds. */
void host_clock_init(unsigned int ms)
{
#if HOST_HAVE_TSC
	host_clock.tsc = tsc_calibrate(ms, &host_clock.mult, &host_clock.hz);
#else
	(void)ms;
#endif
}
