/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Latency histograms: log-linear buckets (16 per power of two, so any
 * percentile is within 6.25% of the true value), exact count/sum/max, and
 * the bcc funclatency log2 view derived from them.
 */
#ifndef PCPLAB_HISTOGRAM_H
#define PCPLAB_HISTOGRAM_H

#include "types.h"

#define HIST_SUB_BITS 4
#define HIST_SUB (1 << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	u64 count;
	u64 sum;
	u64 max;
	u64 buckets[HIST_BUCKETS];
	/*
	 * To a whole number of cache lines: in an array of histograms that
	 * starts on a line, every count, sum and max then share one line,
	 * and hist_record() touches two lines, not three.
	 */
	u64 __pad[5];
};

/* Bucket index of @v: exact below 16, then 16 sub-buckets per octave. */
static inline unsigned int hist_bucket(u64 v)
{
	unsigned int msb;

	if (v < HIST_SUB)
		return (unsigned int)v;
	msb = 63 - __builtin_clzll(v);
	return (msb - HIST_SUB_BITS + 1) * HIST_SUB +
	       (unsigned int)((v >> (msb - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* Record one value (not thread safe: each CPU owns its histograms). */
static inline void hist_record(struct hist *h, u64 v)
{
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	h->buckets[hist_bucket(v)]++;
}

/* Smallest value that falls into bucket @b. */
u64 hist_bucket_lo(unsigned int b);
/* Add every sample of @src to @dst. */
void hist_merge(struct hist *dst, const struct hist *src);
/* Nearest-rank percentile @p (0..100), the midpoint of its bucket. */
u64 hist_percentile(const struct hist *h, double p);
/* Counts per funclatency log2 slot (slot 1 = 0..1, slot i = 2^(i-1)..2^i-1);
 * returns the highest non-empty slot, 0 if empty. @slots has 65 entries. */
int hist_log2(const struct hist *h, u64 slots[65]);

_Static_assert(sizeof(struct hist) % 64 == 0,
	       "a histogram is a whole number of cache lines");

#endif
