// SPDX-License-Identifier: GPL-2.0
/*
 * Fast-path benchmark of the model on the native platform:
 *  - ns per order-0 alloc+free pair served by the PCP (no zone->lock),
 *  - ns per page moved under zone->lock by rmqueue_bulk and by
 *    free_pcppages_bulk, for several batch sizes.
 * Prints one JSON object; bench/run.py records it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/engine.h>
#include "../src/arch/native/native.h"

#define REPEATS 9
#define BURST 16
static unsigned long pairs = 5000000UL;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* ns per alloc+free pair: the median and minimum of REPEATS rounds. */
static void fastpath_pair_ns(double *median, double *best)
{
	double round[REPEATS];
	struct page *burst[BURST];
	struct page *page;
	u64 start;

	/* warm the pageset so that every alloc hits the list */
	for (int i = 0; i < 1000; i++) {
		page = alloc_pages(0, MIGRATE_MOVABLE);
		free_frozen_pages(page, 0);
	}
	for (int r = 0; r < REPEATS; r++) {
		start = now_ns();
		for (unsigned long i = 0; i < pairs; i += BURST) {
			for (int j = 0; j < BURST; j++)
				burst[j] = alloc_pages(0, MIGRATE_MOVABLE);
			for (int j = 0; j < BURST; j++)
				free_frozen_pages(burst[j], 0);
		}
		round[r] = (double)(now_ns() - start) / pairs;
	}
	qsort(round, REPEATS, sizeof(round[0]), cmp_double);
	*median = round[REPEATS / 2];
	*best = round[0];
}

/* ns per page of one rmqueue_bulk and one free_pcppages_bulk of @n. */
static void bulk_ns(struct zone *zone, int n, double *alloc, double *free)
{
	struct per_cpu_pages *pcp = per_cpu_ptr(zone, 0);
	int pindex = (int)order_to_pindex(MIGRATE_MOVABLE, 0);
	u64 t_alloc = 0, t_free = 0, start;
	int rounds = 2000000 / n + 10;

	drain_pages_zone(0, zone);
	for (int r = 0; r < rounds; r++) {
		pcp_spin_lock(&pcp->lock);
		start = now_ns();
		pcp->count +=
			rmqueue_bulk(zone, 0, (unsigned long)n,
				     &pcp->lists[pindex], MIGRATE_MOVABLE, 0);
		t_alloc += now_ns() - start;
		start = now_ns();
		free_pcppages_bulk(zone, n, pcp, pindex);
		t_free += now_ns() - start;
		pcp_spin_unlock(&pcp->lock);
	}
	*alloc = (double)t_alloc / rounds / n;
	*free = (double)t_free / rounds / n;
}

int main(int argc, char **argv)
{
	struct zone_desc zd = { 0, ZONE_NORMAL, 4UL << 18 }; /* 4 GiB */
	static const int sizes[] = { 63, 252, 2016 };
	struct zone *zone;
	double median, best;

	if (argc > 1)
		pairs = strtoul(argv[1], NULL, 0);
	arch_init();
	pcp_policy.gen = *find_kernel_gen("6.18");
	if (free_area_init(&zd, 1, 1, NULL))
		return 1;
	arch_set_cpu(0);
	zone = &NODE_DATA(0)->node_zones[0];
	fastpath_pair_ns(&median, &best);
	printf("{\"clock\":\"%s\",\"pcp_alloc_free_pair_ns\":%.2f,"
	       "\"pcp_alloc_free_pair_ns_min\":%.2f,\"rounds\":%d,"
	       "\"pairs_per_round\":%lu,\"zone_lock_per_page_ns\":[",
	       tsc_usable ? "tsc" : "clock_gettime", median, best, REPEATS,
	       pairs);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		double a, f;

		bulk_ns(zone, sizes[i], &a, &f);
		printf("%s{\"pages\":%d,\"rmqueue_bulk\":%.2f,"
		       "\"free_pcppages_bulk\":%.2f}",
		       i ? "," : "", sizes[i], a, f);
	}
	printf("]}\n");
	free_area_exit();
	return 0;
}
