// SPDX-License-Identifier: GPL-2.0
/*
 * The per-second samples of a phase: the harness sleeps to each second's
 * boundary and reads every task's counters in the shared mapping (ops and
 * pages, one cache-line-strided slot per task as in will-it-scale), the
 * sum, the slowest and the fastest task. Apart from the tasks, which only
 * write the counters, and from the front-end handshake between phases.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "harness.h"

/* Sleep until CLOCK_MONOTONIC @deadline_ns; false if the run must stop. */
static bool sleep_until(struct harness *h, u64 deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / NSEC_PER_SEC),
			       .tv_nsec = (long)(deadline_ns % NSEC_PER_SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) {
		if (host_interrupted || READ_ONCE(h->sh->failed))
			return false;
	}
	return !host_interrupted && !READ_ONCE(h->sh->failed);
}

static double task_ops(struct harness *h, int i)
{
	return (double)(*task_counter(h, i, 0) >> host_ops_shift(h->spec->wl));
}

static double task_pages(struct harness *h, int i)
{
	return (double)*task_counter(h, i,
				     host_ops_are_pages(h->spec->wl) ? 0 : 1);
}

static void snapshot(struct harness *h)
{
	for (int i = 0; i < h->spec->tasks; i++) {
		h->prev[i] = task_ops(h, i);
		h->prev_pages[i] = task_pages(h, i);
	}
}

/*
 * Run one phase of @seconds, sampling every second (the last sample may
 * be shorter); false if the run must stop.
 */
bool run_phase(struct harness *h, double seconds, struct host_phase_result *r)
{
	int tasks = h->spec->tasks;
	u64 start = mono_ns(), end = start + (u64)(seconds * 1e9), now = start;
	int cap = (int)ceil(seconds) + 1;

	r->samples = calloc((size_t)cap, sizeof(*r->samples));
	if (!r->samples)
		return false;
	snapshot(h);
	for (int k = 1; now < end && r->nr_samples < cap; k++) {
		struct host_sample *s = &r->samples[r->nr_samples++];
		u64 target = min(start + (u64)k * NSEC_PER_SEC, end);
		bool ok = sleep_until(h, target);

		now = mono_ns();
		s->t_s = (double)(now - start) / 1e9;
		s->min = INFINITY;
		for (int i = 0; i < tasks; i++) {
			double ops = task_ops(h, i), pages = task_pages(h, i);
			double d = ops - h->prev[i];

			s->ops += d;
			s->min = fmin(s->min, d);
			s->max = fmax(s->max, d);
			r->pages += pages - h->prev_pages[i];
			h->prev[i] = ops;
			h->prev_pages[i] = pages;
		}
		r->ops += s->ops;
		if (!ok)
			return false;
	}
	r->seconds = (double)(now - start) / 1e9;
	return true;
}
