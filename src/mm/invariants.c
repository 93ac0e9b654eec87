// SPDX-License-Identifier: GPL-2.0
/*
 * The invariant checker: every page of every zone is in exactly one place
 * (a buddy free list, a pcp list, held by a task, or not yet handed to the
 * buddy), and every counter agrees with the lists it counts. Runs after
 * every run and throughout the property tests, with the model quiescent.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/mm.h>

static void violation(struct invariant_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nr_violations < MAX_VIOLATIONS) {
		va_start(ap, fmt);
		vsnprintf(r->violations[r->nr_violations],
			  sizeof(r->violations[0]), fmt, ap);
		va_end(ap);
	}
	r->nr_violations++;
}

/* Mark [pfn, pfn + 2^order) seen; complain about a page seen twice. */
static void mark_block(struct invariant_report *r, const struct zone *zone,
		       u8 *seen, unsigned long pfn, unsigned int order,
		       const char *where)
{
	unsigned long off = pfn - zone->zone_start_pfn;

	if (pfn < zone->zone_start_pfn ||
	    pfn + (1UL << order) > zone->deferred_pfn) {
		violation(r, "%s: pfn %lu order %u outside zone %s", where, pfn,
			  order, zone->name);
		return;
	}
	if (pfn & ((1UL << order) - 1))
		violation(r, "%s: pfn %lu not aligned to order %u", where, pfn,
			  order);
	for (unsigned long i = 0; i < 1UL << order; i++) {
		if (seen[off + i]) {
			violation(r, "%s: pfn %lu is in two places", where,
				  pfn + i);
			return;
		}
		seen[off + i] = 1;
	}
}

static unsigned long check_free_lists(struct invariant_report *r,
				      struct zone *zone, u8 *seen)
{
	unsigned long pages = 0;

	for (unsigned int o = 0; o < NR_PAGE_ORDERS; o++) {
		unsigned long n = 0;

		for (int mt = 0; mt < MIGRATE_TYPES; mt++) {
			struct page *page;

			list_for_each_entry (
				page, &zone->free_area[o].free_list[mt], lru) {
				n++;
				if (page->state != PAGE_BUDDY ||
				    page->order != o)
					violation(
						r,
						"buddy: pfn %lu on order-%u list has state %u order %u",
						page_to_pfn(page), o,
						page->state, page->order);
				if ((int)get_pageblock_migratetype(page) != mt)
					violation(
						r,
						"buddy: pfn %lu on type-%d list, pageblock type %u",
						page_to_pfn(page), mt,
						get_pageblock_migratetype(
							page));
				mark_block(r, zone, seen, page_to_pfn(page), o,
					   "buddy");
				/* a policy may leave order-0 buddies apart */
				if (o < MAX_PAGE_ORDER &&
				    (o || !pcp_policy.ops->skip_merge_order0)) {
					unsigned long b =
						page_to_pfn(page) ^ (1UL << o);

					if (b >= zone->zone_start_pfn &&
					    b < zone->deferred_pfn &&
					    pfn_to_page(b)->state ==
						    PAGE_BUDDY &&
					    pfn_to_page(b)->order == o &&
					    (o < pageblock_order ||
					     (int)get_pageblock_migratetype(
						     pfn_to_page(b)) == mt))
						violation(
							r,
							"buddy: pfn %lu and its buddy %lu are free at order %u but not merged",
							page_to_pfn(page), b,
							o);
				}
			}
		}
		if (n != zone->free_area[o].nr_free)
			violation(r,
				  "buddy: %s order %u nr_free %lu, lists %lu",
				  zone->name, o, zone->free_area[o].nr_free, n);
		pages += n << o;
	}
	if ((long)(pages + zone_end_pfn(zone) - zone->deferred_pfn) !=
	    zone->nr_free_pages)
		violation(
			r,
			"buddy: %s NR_FREE_PAGES %ld, lists + deferred hold %lu",
			zone->name, zone->nr_free_pages,
			pages + zone_end_pfn(zone) - zone->deferred_pfn);
	return pages;
}

/* The pages other CPUs freed to @cpu's pageset, not yet on its lists. */
static unsigned long check_remote(struct invariant_report *r, struct zone *zone,
				  int cpu, u8 *seen)
{
	struct per_cpu_pages *pcp = per_cpu_ptr(zone, cpu);
	unsigned long pages = 0;
	struct page *page;

	list_for_each_entry (page, &pcp->remote, lru) {
		if (page->state != PAGE_PCP || page->order != 0)
			violation(
				r,
				"pcp: cpu %d pfn %lu on the remote queue has state %u order %u",
				cpu, page_to_pfn(page), page->state,
				page->order);
		mark_block(r, zone, seen, page_to_pfn(page), 0, "remote");
		pages++;
	}
	if ((long)pages != pcp->nr_remote)
		violation(r, "pcp: cpu %d %s nr_remote %d, queue holds %lu",
			  cpu, zone->name, pcp->nr_remote, pages);
	return pages;
}

static unsigned long check_pcp(struct invariant_report *r, struct zone *zone,
			       int cpu, u8 *seen)
{
	struct per_cpu_pages *pcp = per_cpu_ptr(zone, cpu);
	unsigned long pages = 0;

	for (unsigned int i = 0; i < NR_PCP_LISTS; i++) {
		int order = pindex_to_order(i);
		struct page *page;

		list_for_each_entry (page, &pcp->lists[i], lru) {
			if (page->state != PAGE_PCP || page->order != order)
				violation(
					r,
					"pcp: cpu %d pfn %lu on list %u has state %u order %u",
					cpu, page_to_pfn(page), i, page->state,
					page->order);
			mark_block(r, zone, seen, page_to_pfn(page),
				   (unsigned)order, "pcp");
			pages += 1UL << order;
		}
	}
	if ((long)pages != pcp->count)
		violation(r, "pcp: cpu %d %s count %d, lists hold %lu", cpu,
			  zone->name, pcp->count, pages);
	pages += check_remote(r, zone, cpu, seen);
	if (pcp->high_min > pcp->high_max)
		violation(r, "pcp: cpu %d high_min %d > high_max %d", cpu,
			  pcp->high_min, pcp->high_max);
	return pages;
}

/* Held blocks are the unseen rest; a tail outside any block is lost. */
static unsigned long check_held(struct invariant_report *r, struct zone *zone,
				u8 *seen, unsigned long *on_lru)
{
	unsigned long held = 0, pfn = zone->zone_start_pfn;

	while (pfn < zone->deferred_pfn) {
		unsigned long off = pfn - zone->zone_start_pfn;
		struct page *page;

		if (seen[off]) {
			pfn++;
			continue;
		}
		page = pfn_to_page(pfn);
		if (page->state != PAGE_HELD) {
			violation(r, "lost: pfn %lu (%s) is nowhere, state %u",
				  pfn, zone->name, page->state);
			pfn++;
			continue;
		}
		mark_block(r, zone, seen, pfn, page->order, "held");
		*on_lru += page->on_lru;
		held += 1UL << page->order;
		pfn += 1UL << page->order;
	}
	return held;
}

/* Check one zone; returns the number of its held pages on the LRU. */
static unsigned long check_zone(struct invariant_report *r, struct zone *zone)
{
	unsigned long used = zone->deferred_pfn - zone->zone_start_pfn;
	u8 *seen = calloc(used ? used : 1, 1);
	unsigned long buddy, pcp = 0, held, deferred, on_lru = 0;

	BUG_ON(!seen);
	buddy = check_free_lists(r, zone, seen);
	for (int cpu = 0; cpu < nr_cpu_ids; cpu++)
		pcp += check_pcp(r, zone, cpu, seen);
	held = check_held(r, zone, seen, &on_lru);
	deferred = zone_end_pfn(zone) - zone->deferred_pfn;
	free(seen);

	if (buddy + pcp + held + deferred != zone->managed_pages)
		violation(
			r,
			"conservation: %s buddy %lu + pcp %lu + held %lu + deferred %lu != managed %lu",
			zone->name, buddy, pcp, held, deferred,
			zone->managed_pages);
	r->buddy_pages += buddy;
	r->pcp_pages += pcp;
	r->held_pages += held;
	r->deferred_pages += deferred;
	r->managed_pages += zone->managed_pages;
	return on_lru;
}

/*
 * Check every zone and the LRUs. @held_expected is the number of pages the
 * tasks say they hold; they must match what the memory map says is held.
 */
void check_invariants(struct invariant_report *r, unsigned long held_expected)
{
	unsigned long lru = 0;

	memset(r, 0, sizeof(*r));
	r->checked = true;
	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct pglist_data *pgdat = NODE_DATA(nid);
		struct zone *zone;
		unsigned long n = 0;

		for_each_populated_zone_of (pgdat, zone)
			n += check_zone(r, zone);
		if (n != pgdat->lruvec.nr_pages)
			violation(
				r,
				"lru: node %d nr_pages %lu, held pages on it %lu",
				nid, pgdat->lruvec.nr_pages, n);
		lru += n;
	}
	if (r->held_pages != held_expected)
		violation(r, "held: tasks hold %lu pages, memory map says %lu",
			  held_expected, r->held_pages);
	if (lru > r->held_pages)
		violation(r, "lru: %lu pages on LRUs but only %lu held", lru,
			  r->held_pages);
	r->pages_conserved = r->nr_violations == 0;
}
