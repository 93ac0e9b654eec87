// SPDX-License-Identifier: GPL-2.0
/*
 * Building the model's memory: nodes, zones, watermarks, and the sizing of
 * the per-CPU pagesets (zone_batchsize, zone_highsize,
 * zone_set_pageset_high_and_batch), after mm/mm_init.c and the sizing part
 * of mm/page_alloc.c: zone_batchsize as Joshua Hahn's "Clarify batch tuning
 * in zone_batchsize" (linux-mm, Oct 2025, no functional change) writes it,
 * high_min and high_max as 90b41691b988 ("mm: add framework for PCP high
 * auto-tuning", v6.7) introduced them.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/mm.h>

/* percpu_pagelist_high_fraction: 0, or at least this (EINVAL below). */
#define MIN_PERCPU_PAGELIST_HIGH_FRACTION 8
#define WATERMARK_SCALE_FACTOR 10

struct pglist_data *node_data[MAX_NUMNODES];
int nr_node_ids;
int nr_cpu_ids;
int cpu_to_node_map[NR_CPUS];
struct cpu_stats *cpu_stats;

/* The zone names of /proc/zoneinfo. */
const char *zone_type_name(enum zone_type type)
{
	static const char *const names[] = { "DMA", "DMA32", "Normal",
					     "Movable" };

	return names[type];
}

/*
 * pcp->batch for a zone: about a quarter of a thousandth of the zone, capped
 * at a quarter of 1 MiB (512 KiB before v4.19), rounded down to 2^n - 1 so
 * that competing batches do not alias in the cache.
 */
int zone_batchsize(const struct zone *zone)
{
	unsigned long cap = pcp_policy.gen.batch_cap_bytes / PAGE_SIZE / 4;
	unsigned long batch = min(zone->managed_pages >> 12, cap);

	if (batch <= 1)
		return 1;
	return (int)rounddown_pow_of_two(batch + batch / 2) - 1;
}

/*
 * The pcp->high a zone's pagesets get: the low watermark (fraction 0) or
 * managed/fraction, split over the CPUs of the zone's node, at least four
 * batches. @cpu_online counts a CPU that is coming up.
 */
int zone_highsize(const struct zone *zone, int batch, int cpu_online,
		  int high_fraction)
{
	unsigned long total;
	int nr_split_cpus;

	if (!high_fraction)
		total = low_wmark_pages(zone);
	else
		total = zone->managed_pages / high_fraction;

	nr_split_cpus = zone->zone_pgdat->nr_cpus + cpu_online;
	if (!nr_split_cpus)
		nr_split_cpus = nr_cpu_ids;

	return (int)max(total / nr_split_cpus, (unsigned long)batch << 2);
}

/* v4.18's pageset_set_high(): percpu_pagelist_fraction, not split by CPU. */
static void v418_high_and_batch(const struct zone *zone, int *high, int *batch)
{
	if (!pcp_policy.high_fraction) {
		*high = 6 * *batch;
		return;
	}
	*high = (int)(zone->managed_pages / pcp_policy.high_fraction);
	if (!pcp_policy.batch)
		*batch = clamp(*high / 4, 1, PAGE_SHIFT * 8);
}

/*
 * Compute batch, high_min and high_max for @zone and write them into every
 * CPU's pageset if they changed. On v6.7+ pcp->high itself is not written:
 * it is clamped into [high_min, high_max] on its next use.
 */
void zone_set_pageset_high_and_batch(struct zone *zone, int cpu_online)
{
	const struct kernel_gen *gen = &pcp_policy.gen;
	int batch = pcp_policy.batch ? pcp_policy.batch : zone_batchsize(zone);
	int high_min, high_max, cpu;

	if (!gen->high_from_zone) {
		v418_high_and_batch(zone, &high_min, &batch);
		high_max = high_min;
	} else if (pcp_policy.high_fraction || !gen->high_autotune) {
		high_min = zone_highsize(zone, batch, cpu_online,
					 pcp_policy.high_fraction);
		high_max = high_min;
	} else {
		high_min = zone_highsize(zone, batch, cpu_online, 0);
		high_max = zone_highsize(zone, batch, cpu_online,
					 MIN_PERCPU_PAGELIST_HIGH_FRACTION);
	}
	if (pcp_policy.high >= 0)
		high_min = high_max = pcp_policy.high;

	if (zone->pageset_high_min == high_min &&
	    zone->pageset_high_max == high_max && zone->pageset_batch == batch)
		return;
	zone->pageset_high_min = high_min;
	zone->pageset_high_max = high_max;
	zone->pageset_batch = batch;

	if (!zone->per_cpu_pageset)
		return;
	for_each_cpu (cpu) {
		struct per_cpu_pages *pcp = per_cpu_ptr(zone, cpu);

		WRITE_ONCE(pcp->batch, batch);
		WRITE_ONCE(pcp->high_min, high_min);
		WRITE_ONCE(pcp->high_max, high_max);
		if (!gen->high_autotune)
			WRITE_ONCE(pcp->high, high_min);
	}
}

/* The values vm.percpu_pagelist_high_fraction accepts: 0, or 8..INT_MAX. */
bool high_fraction_valid(long long fraction)
{
	return fraction == 0 ||
	       (fraction >= MIN_PERCPU_PAGELIST_HIGH_FRACTION &&
		fraction <= INT_MAX);
}

/*
 * Write vm.percpu_pagelist_high_fraction: as the kernel's sysctl handler,
 * refuse 1..7 and negatives, and recompute every zone. 0 or -EINVAL.
 */
int percpu_pagelist_high_fraction_set(int fraction)
{
	if (!high_fraction_valid(fraction))
		return -EINVAL;
	pcp_policy.high_fraction = fraction;
	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct zone *zone;

		for_each_populated_zone_of (NODE_DATA(nid), zone)
			zone_set_pageset_high_and_batch(zone, 0);
	}
	return 0;
}

/* min_free_kbytes for a machine with @lowmem_kbytes: sqrt(16 * lowmem). */
unsigned long calculate_min_free_kbytes(unsigned long lowmem_kbytes)
{
	unsigned long v = (unsigned long)sqrt((double)lowmem_kbytes * 16);

	return clamp(v, 128UL, 262144UL);
}

/*
 * Watermarks: min is min_free_kbytes shared by managed size; low and high
 * add max(min/4, managed * watermark_scale_factor / 10000) once and twice.
 */
void setup_per_zone_wmarks(unsigned long min_free_kbytes)
{
	unsigned long pages_min = min_free_kbytes >> (PAGE_SHIFT - 10);
	unsigned long lowmem_pages = 0;
	int nid;
	struct zone *zone;

	for (nid = 0; nid < nr_node_ids; nid++)
		for_each_populated_zone_of (NODE_DATA(nid), zone)
			lowmem_pages += zone->managed_pages;
	if (!lowmem_pages)
		return;

	for (nid = 0; nid < nr_node_ids; nid++) {
		for_each_populated_zone_of (NODE_DATA(nid), zone) {
			unsigned long tmp =
				(unsigned long)((double)pages_min *
						zone->managed_pages /
						lowmem_pages);
			unsigned long delta =
				max(tmp >> 2, zone->managed_pages *
						      WATERMARK_SCALE_FACTOR /
						      10000);

			zone->_watermark[WMARK_MIN] = tmp;
			zone->_watermark[WMARK_LOW] = tmp + delta;
			zone->_watermark[WMARK_HIGH] = tmp + 2 * delta;
		}
	}
}

/* A fresh pageset: empty lists, the boot pageset's high 0 and batch 1. */
static void per_cpu_pages_init(struct per_cpu_pages *pcp, int cpu)
{
	memset(pcp, 0, sizeof(*pcp));
	pcp_lock_init(&pcp->lock, cpu);
	for (int i = 0; i < NR_PCP_LISTS; i++)
		INIT_LIST_HEAD(&pcp->lists[i]);
	spin_lock_init(&pcp->remote_lock, LOCK_PCP_REMOTE);
	INIT_LIST_HEAD(&pcp->remote);
	pcp->batch = 1;
}

/* Bytes of a zone's pageset rings (struct per_cpu_pages.recent). */
static size_t pcp_recent_bytes(void)
{
	return sizeof(u32) * PCP_RECENT * (size_t)nr_cpu_ids;
}

static int zone_init(struct zone *zone, struct pglist_data *pgdat,
		     const struct zone_desc *zd, unsigned long start_pfn)
{
	unsigned long nr_blocks;

	spin_lock_init(&zone->lock, LOCK_ZONE);
	for (int o = 0; o < NR_PAGE_ORDERS; o++) {
		for (int mt = 0; mt < MIGRATE_TYPES; mt++)
			INIT_LIST_HEAD(&zone->free_area[o].free_list[mt]);
		zone->free_area[o].nr_free = 0;
	}
	zone->zone_pgdat = pgdat;
	zone->node = pgdat->node_id;
	zone->type = zd->type;
	zone->name = zone_type_name(zd->type);
	zone->zone_start_pfn = start_pfn;
	zone->spanned_pages = zd->managed_pages;
	zone->managed_pages = zd->managed_pages;
	zone->deferred_pfn = start_pfn;
	zone->nr_free_pages = (long)zd->managed_pages; /* all deferred */
	zone->pageset_high_min = zone->pageset_high_max = -1;
	zone->pageset_batch = -1;

	/* Every pageblock starts MOVABLE, as memmap_init_range() does. */
	nr_blocks = DIV_ROUND_UP(zd->managed_pages, pageblock_nr_pages);
	zone->pageblock_flags = malloc(nr_blocks ? nr_blocks : 1);
	if (!zone->pageblock_flags)
		return -ENOMEM;
	memset(zone->pageblock_flags, MIGRATE_MOVABLE, nr_blocks);
	zone->pageblock_owner =
		malloc(sizeof(s16) * (nr_blocks ? nr_blocks : 1));
	if (!zone->pageblock_owner)
		return -ENOMEM;
	memset(zone->pageblock_owner, 0xff, sizeof(s16) * nr_blocks); /* -1 */

	zone->per_cpu_pageset =
		memblock_alloc(sizeof(struct per_cpu_pages) * nr_cpu_ids);
	if (!zone->per_cpu_pageset)
		return -ENOMEM;
	/*
	 * The rings stay out of memblock's list region: at 4 KiB per CPU and
	 * zone, the largest machines would overflow its 256 MiB.
	 */
	zone->pcp_recent = huge_zalloc(pcp_recent_bytes());
	if (!zone->pcp_recent)
		return -ENOMEM;
	for (int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		struct per_cpu_pages *pcp = per_cpu_ptr(zone, cpu);

		per_cpu_pages_init(pcp, cpu);
		pcp->recent = zone->pcp_recent + (size_t)cpu * PCP_RECENT;
	}
	return 0;
}

/*
 * Each node's fallback zonelist: its own zones from the highest, then the
 * other nodes' in increasing distance (the model's distance is the node
 * number difference, wrapping).
 */
static void build_all_zonelists(void)
{
	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct zone **z = NODE_DATA(nid)->zonelist;

		for (int i = 0; i < nr_node_ids; i++) {
			struct pglist_data *pgdat =
				NODE_DATA((nid + i) % nr_node_ids);

			for (int zi = pgdat->nr_zones - 1; zi >= 0; zi--)
				if (pgdat->node_zones[zi].managed_pages)
					*z++ = &pgdat->node_zones[zi];
		}
		*z = NULL;
	}
}

/*
 * Build nodes and zones from @zones (in pfn order; each zone starts on a
 * section boundary so that a section belongs to one zone), size the
 * watermarks and pagesets, and allocate the per-CPU statistics. Pages are
 * handed to the buddy lazily (deferred_grow_zone()).
 */
int free_area_init(const struct zone_desc *zones, int nr_zones, int nr_cpus,
		   const int *cpu_node)
{
	unsigned long pfn = 0, lowmem_kbytes = 0;
	int i, ret;

	if (nr_cpus < 1 || nr_cpus > NR_CPUS)
		return -EINVAL;
	nr_cpu_ids = nr_cpus;
	nr_node_ids = 0;
	for (i = 0; i < nr_cpus; i++) {
		cpu_to_node_map[i] = cpu_node ? cpu_node[i] : 0;
		nr_node_ids = max(nr_node_ids, cpu_to_node_map[i] + 1);
	}
	for (i = 0; i < nr_zones; i++)
		nr_node_ids = max(nr_node_ids, zones[i].node + 1);
	if (nr_node_ids > MAX_NUMNODES)
		return -EINVAL;

	for (i = 0; i < nr_zones; i++)
		pfn += DIV_ROUND_UP(zones[i].managed_pages, PAGES_PER_SECTION) *
		       PAGES_PER_SECTION;
	ret = sparse_init(pfn);
	if (ret)
		return ret;

	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct pglist_data *pgdat = memblock_alloc(sizeof(*pgdat));

		if (!pgdat)
			return -ENOMEM;
		pgdat->node_id = nid;
		spin_lock_init(&pgdat->lruvec.lru_lock, LOCK_LRU);
		for (i = 0; i < nr_cpus; i++)
			pgdat->nr_cpus += cpu_to_node_map[i] == nid;
		node_data[nid] = pgdat;
	}

	pfn = 0;
	for (i = 0; i < nr_zones; i++) {
		struct pglist_data *pgdat = NODE_DATA(zones[i].node);
		struct zone *zone = &pgdat->node_zones[pgdat->nr_zones++];

		if (pgdat->nr_zones > MAX_NR_ZONES)
			return -EINVAL;
		ret = zone_init(zone, pgdat, &zones[i], pfn);
		if (ret)
			return ret;
		pfn += DIV_ROUND_UP(zones[i].managed_pages, PAGES_PER_SECTION) *
		       PAGES_PER_SECTION;
		lowmem_kbytes += zones[i].managed_pages << (PAGE_SHIFT - 10);
	}

	build_all_zonelists();
	/* 86 KiB of histograms per CPU, twice: huge pages spare the TLB */
	cpu_stats = huge_zalloc(sizeof(struct cpu_stats) * 2 * nr_cpus);
	if (!cpu_stats)
		return -ENOMEM;

	setup_per_zone_wmarks(
		pcp_policy.min_free_kbytes
			? pcp_policy.min_free_kbytes
			: calculate_min_free_kbytes(lowmem_kbytes));
	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct zone *zone;

		for_each_populated_zone_of (NODE_DATA(nid), zone)
			zone_set_pageset_high_and_batch(zone, 0);
	}
	return 0;
}

/* Free everything free_area_init() built. */
void free_area_exit(void)
{
	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct pglist_data *pgdat = NODE_DATA(nid);

		if (!pgdat)
			continue;
		/* the pgdat and pagesets go with the list region */
		for (int z = 0; z < pgdat->nr_zones; z++) {
			free(pgdat->node_zones[z].pageblock_flags);
			free(pgdat->node_zones[z].pageblock_owner);
			huge_free(pgdat->node_zones[z].pcp_recent,
				  pcp_recent_bytes());
		}
		node_data[nid] = NULL;
	}
	huge_free(cpu_stats, sizeof(struct cpu_stats) * 2 * nr_cpu_ids);
	cpu_stats = NULL;
	sparse_exit();
	nr_node_ids = 0;
}
