/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A cheap clock for timing page faults from user space: the TSC where it
 * is invariant (constant_tsc and nonstop_tsc), else CLOCK_MONOTONIC, with
 * a conversion to nanoseconds calibrated against CLOCK_MONOTONIC.
 */
#ifndef PCPLAB_HOST_CLOCK_H
#define PCPLAB_HOST_CLOCK_H

#include <time.h>

#include <pcplab/types.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HOST_HAVE_TSC 1
#else
#define HOST_HAVE_TSC 0
#endif

struct host_clock {
	bool tsc; /* cycles() reads the TSC; else it is CLOCK_MONOTONIC ns */
	u64 mult; /* ns = cycles * mult >> 32 */
	double hz; /* cycles per second */
};

extern struct host_clock host_clock;

/* CLOCK_MONOTONIC in nanoseconds. */
static inline u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

/* The cheap clock: TSC cycles, or nanoseconds without a usable TSC. */
static inline u64 cycles(void)
{
#if HOST_HAVE_TSC
	if (likely(host_clock.tsc))
		return __rdtsc();
#endif
	return mono_ns();
}

/* Convert a cycles() interval to nanoseconds. */
static inline u64 cyc2ns(u64 c)
{
	return (u64)(((unsigned __int128)c * host_clock.mult) >> 32);
}

/* Choose the clock and calibrate it over @ms milliseconds. */
void host_clock_init(unsigned int ms);

#endif
