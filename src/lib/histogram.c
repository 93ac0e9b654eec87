// SPDX-License-Identifier: GPL-2.0
/*
 * Latency histograms: percentiles from log-linear buckets and the bcc
 * funclatency log2 view. No Debian package ships HdrHistogram_c, and the
 * hot path needs only an increment, so this is the whole implementation.
 */
#include <math.h>

#include <pcplab/histogram.h>

/* Smallest value that falls into bucket @b. */
u64 hist_bucket_lo(unsigned int b)
{
	unsigned int octave = b / HIST_SUB, sub = b % HIST_SUB;
	unsigned int msb;

	if (b < HIST_SUB)
		return b;
	msb = octave + HIST_SUB_BITS - 1;
	return (1ULL << msb) | ((u64)sub << (msb - HIST_SUB_BITS));
}

/* Add every sample of @src to @dst. */
void hist_merge(struct hist *dst, const struct hist *src)
{
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
	for (unsigned int b = 0; b < HIST_BUCKETS; b++)
		dst->buckets[b] += src->buckets[b];
}

/*
 * Nearest-rank percentile @p: the midpoint of the bucket holding the
 * ceil(p/100 * count)-th smallest sample, never above the true maximum.
 */
u64 hist_percentile(const struct hist *h, double p)
{
	u64 rank, seen = 0;

	if (!h->count)
		return 0;
	rank = (u64)ceil(p / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	for (unsigned int b = 0; b < HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank) {
			u64 lo = hist_bucket_lo(b);
			u64 hi = b + 1 < HIST_BUCKETS
					 ? hist_bucket_lo(b + 1) - 1
					 : UINT64_MAX;
			u64 mid = lo + (hi - lo) / 2;

			return mid < h->max ? mid : h->max;
		}
	}
	return h->max;
}

/*
 * funclatency's slots: slot = floor(log2 v) + 1, and 0 also in slot 1.
 * Every log-linear bucket lies inside one log2 slot, so this is exact.
 */
int hist_log2(const struct hist *h, u64 slots[65])
{
	int top = 0;

	for (int i = 0; i < 65; i++)
		slots[i] = 0;
	for (unsigned int b = 0; b < HIST_BUCKETS; b++) {
		u64 lo = hist_bucket_lo(b);
		int slot;

		if (!h->buckets[b])
			continue;
		slot = lo ? 64 - __builtin_clzll(lo) : 1;
		slots[slot] += h->buckets[b];
		if (slot > top)
			top = slot;
	}
	return top;
}
