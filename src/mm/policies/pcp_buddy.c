// SPDX-License-Identifier: GPL-2.0
/*
 * pcp-buddy: per-CPU ownership of whole pageblocks, after Johannes
 * Weiner's RFC "mm: page_alloc: pcp buddy allocator" (linux-mm,
 * 2026-04-03; not merged). A CPU claims whole free pageblocks and owns
 * them (the RFC's pageblock_data owner and PagePCPBuddy mark); it splits
 * them outside zone->lock, and a page freed on any CPU goes back to its
 * block's owner, against the zone->lock contention of allocator purge
 * threads (jemalloc/tcmalloc background threads free what other CPUs
 * allocated) and of mass exits.
 *
 * The RFC's refill runs in phases; the model's four:
 *
 *  1. absorb the pages other CPUs freed to this one (pcp->remote, the
 *     owner's queue) into its lists: no zone->lock;
 *  2. if that refilled the list, done;
 *  3. claim a whole free pageblock (one __rmqueue() of pageblock_order
 *     under one short zone->lock hold), mark this CPU its owner, and split
 *     it into order-0 pages on the list outside the lock;
 *  4. else the old path: rmqueue_bulk() of the generation's refill size.
 *
 * A free of an order-0 page whose block another CPU owns is queued for the
 * owner (under its remote_lock; the RFC's queue is lockless); the owner
 * absorbs it at its next refill. While the owner's queue holds its
 * high_max the free stays here, so that an owner that stopped allocating does not
 * collect pages forever. Drains, decay and higher orders keep the
 * generation's rules: the model frees owned pages to the buddy one by one
 * under zone->lock, where the RFC merges them in the owner's blocks and
 * returns whole blocks; that saving is not modelled. An owner mark outlives
 * its block's return to the buddy: the next claim overwrites it, and until
 * then frees of its pages still go to the last owner.
 */
#include <pcplab/mm.h>

/* The pageblock of @page in @zone. */
static unsigned long pageblock_index(const struct zone *zone,
				     const struct page *page)
{
	return (page_to_pfn(page) - zone->zone_start_pfn) >> pageblock_order;
}

/* Phase 3: claim a free pageblock and split it onto @list. */
static int claim_pageblock(struct zone *zone, int migratetype,
			   unsigned int alloc_flags, struct list_head *list)
{
	unsigned long pfn;
	struct page *page;

	spin_lock(&zone->lock);
	page = __rmqueue(zone, pageblock_order, migratetype, alloc_flags);
	if (page)
		cost(COST_BUDDY_ALLOC_PAGE, 1);
	spin_unlock(&zone->lock);
	if (!page)
		return 0;
	pfn = page_to_pfn(page);
	WRITE_ONCE(zone->pageblock_owner[pageblock_index(zone, page)],
		   (s16)smp_processor_id());
	for (unsigned long i = 0; i < pageblock_nr_pages; i++) {
		struct page *p = pfn_to_page(pfn + i);

		p->state = PAGE_PCP;
		p->order = 0;
		list_add_tail(&p->lru, list);
	}
	/* the split touches every struct page, outside the lock */
	cost(COST_BUDDY_ALLOC_PAGE, pageblock_nr_pages);
	count_event(PCP_REFILLS, 1);
	count_event(PCP_PAGES_REFILLED, pageblock_nr_pages);
	return (int)pageblock_nr_pages;
}

static int pcp_buddy_refill(struct zone *zone, unsigned int order,
			    int migratetype, unsigned int alloc_flags,
			    struct per_cpu_pages *pcp, struct list_head *list)
{
	int got;

	if (!order) {
		pcp_absorb_remote(zone, pcp); /* phase 1, into pcp->count */
		if (!list_empty(list)) /* phase 2 */
			return 0;
		got = claim_pageblock(zone, migratetype, alloc_flags, list);
		if (got)
			return got;
	}
	return rmqueue_bulk(zone, order,
			    (unsigned long)nr_pcp_alloc(pcp, zone, order), list,
			    migratetype, alloc_flags);
}

static bool pcp_buddy_free_remote(struct zone *zone, struct page *page,
				  unsigned int order)
{
	int owner = order ? -1
			  : READ_ONCE(zone->pageblock_owner[pageblock_index(
				    zone, page)]);
	struct per_cpu_pages *pcp;

	if (owner < 0 || owner == smp_processor_id())
		return false;
	pcp = per_cpu_ptr(zone, owner);
	if (READ_ONCE(pcp->nr_remote) >= READ_ONCE(pcp->high_max))
		return false;
	spin_lock(&pcp->remote_lock);
	WRITE_ONCE(page->state, PAGE_PCP);
	WRITE_ONCE(page->order, 0);
	list_add(&page->lru, &pcp->remote);
	pcp->nr_remote++;
	spin_unlock(&pcp->remote_lock);
	cost(COST_PCP_FREE, 1);
	count_event(PGFREE, 1);
	return true;
}

DEFINE_PCP_POLICY(
	pcp_buddy, .name = "pcp-buddy",
	.summary = "CPUs own whole pageblocks, split them outside "
		   "zone->lock; frees go to the owner (Weiner's 2026 RFC)",
	.refill = pcp_buddy_refill, .free_remote = pcp_buddy_free_remote);
