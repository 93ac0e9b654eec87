// SPDX-License-Identifier: GPL-2.0
/*
 * The buddy allocator: free lists per order and migratetype, split
 * (expand), merge (__free_one_page), migratetype fallback (claim a block,
 * or steal a piece of one), and deferred growth of a zone's free memory.
 * Behaviour of mm/page_alloc.c as of v6.19, whose fallback tries claiming a
 * block before stealing from one since Johannes Weiner's 90abee6d7895
 * ("mm: page_alloc: speed up fallbacks in rmqueue_bulk()", v6.15).
 * Everything here runs under zone->lock.
 */
#include <pcplab/mm.h>

/* Fallback order of migratetypes when a type's lists are empty. */
static const int fallbacks[MIGRATE_PCPTYPES][MIGRATE_PCPTYPES - 1] = {
	[MIGRATE_UNMOVABLE] = { MIGRATE_RECLAIMABLE, MIGRATE_MOVABLE },
	[MIGRATE_MOVABLE] = { MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE },
	[MIGRATE_RECLAIMABLE] = { MIGRATE_UNMOVABLE, MIGRATE_MOVABLE },
};

/* Free pages of @zone, those still waiting for deferred init included. */
unsigned long zone_free_pages(const struct zone *zone)
{
	return (unsigned long)READ_ONCE(zone->nr_free_pages);
}

/*
 * Whether @zone has more than @mark free pages after an allocation of
 * @order, and a free block of at least @order (__zone_watermark_ok without
 * lowmem reserves or highatomic accounting).
 */
bool zone_watermark_ok(struct zone *zone, unsigned int order,
		       unsigned long mark)
{
	long free = (long)zone_free_pages(zone) - (1L << order) + 1;

	if (free <= (long)mark)
		return false;
	if (!order || zone->deferred_pfn < zone_end_pfn(zone))
		return true;
	for (unsigned int o = order; o < NR_PAGE_ORDERS; o++)
		if (READ_ONCE(zone->free_area[o].nr_free))
			return true;
	return false;
}

/* Set the migratetype of the pageblock holding @page. */
void set_pageblock_migratetype(struct page *page, int migratetype)
{
	struct zone *zone = page_zone(page);

	zone->pageblock_flags[(page_to_pfn(page) - zone->zone_start_pfn) >>
			      pageblock_order] = (u8)migratetype;
}

/*
 * NR_FREE_PAGES: written under zone->lock, read locklessly by watermarks.
 * The kernel's account_freepages() calls __mod_zone_page_state(), out of
 * line in mm/vmstat.c: a call function_graph-children traces.
 */
static void account_freepages(struct zone *zone, long nr_pages)
{
	trace_nested_call();
	WRITE_ONCE(zone->nr_free_pages, zone->nr_free_pages + nr_pages);
}

static void add_to_free_list(struct page *page, struct zone *zone,
			     unsigned int order, int migratetype, bool tail)
{
	struct free_area *area = &zone->free_area[order];

	page->state = PAGE_BUDDY;
	page->order = (u8)order;
	if (tail)
		list_add_tail(&page->lru, &area->free_list[migratetype]);
	else
		list_add(&page->lru, &area->free_list[migratetype]);
	WRITE_ONCE(area->nr_free, area->nr_free + 1);
}

static void del_page_from_free_list(struct page *page, struct zone *zone,
				    unsigned int order)
{
	list_del(&page->lru);
	page->state = PAGE_TAIL;
	WRITE_ONCE(zone->free_area[order].nr_free,
		   zone->free_area[order].nr_free - 1);
}

/*
 * Split a block of order @high down to @low: the upper halves go back on
 * the free lists, the caller keeps the lowest 2^low pages.
 */
static void expand(struct zone *zone, struct page *page, unsigned int low,
		   unsigned int high, int migratetype)
{
	unsigned long pfn = page_to_pfn(page);

	while (high > low) {
		high--;
		add_to_free_list(pfn_to_page(pfn + (1UL << high)), zone, high,
				 migratetype, false);
		account_freepages(zone, 1L << high);
	}
}

/* Take the head block of @area's @mt list, split to @order. */
static struct page *take_block(struct zone *zone, unsigned int current_order,
			       unsigned int order, int mt)
{
	struct page *page =
		list_first_entry(&zone->free_area[current_order].free_list[mt],
				 struct page, lru);

	del_page_from_free_list(page, zone, current_order);
	account_freepages(zone, -(1L << current_order));
	expand(zone, page, order, current_order, mt);
	page->order = (u8)order;
	return page;
}

/* The smallest free block of exactly @migratetype that fits @order. */
static struct page *__rmqueue_smallest(struct zone *zone, unsigned int order,
				       int migratetype)
{
	for (unsigned int o = order; o < NR_PAGE_ORDERS; o++)
		if (!list_empty(&zone->free_area[o].free_list[migratetype]))
			return take_block(zone, o, order, migratetype);
	return NULL;
}

/* Whether a fallback at @order may claim the whole pageblock. */
static bool should_try_claim_block(unsigned int order, int start_mt)
{
	return order >= pageblock_order / 2 || start_mt == MIGRATE_UNMOVABLE ||
	       start_mt == MIGRATE_RECLAIMABLE;
}

/* A fallback type with a free block at @order, or -1. */
static int find_suitable_fallback(struct zone *zone, unsigned int order,
				  int migratetype)
{
	for (int i = 0; i < MIGRATE_PCPTYPES - 1; i++) {
		int fmt = fallbacks[migratetype][i];

		if (!list_empty(&zone->free_area[order].free_list[fmt]))
			return fmt;
	}
	return -1;
}

/* Move the free blocks of @page's pageblock to @mt lists and retype it. */
static void move_freepages_block(struct zone *zone, struct page *page,
				 int old_mt, int mt)
{
	unsigned long start = page_to_pfn(page) & ~(pageblock_nr_pages - 1);
	unsigned long pfn = start;

	while (pfn < start + pageblock_nr_pages) {
		struct page *p = pfn_to_page(pfn);

		if (READ_ONCE(p->state) == PAGE_BUDDY) {
			list_move(&p->lru,
				  &zone->free_area[p->order].free_list[mt]);
			pfn += 1UL << p->order;
		} else {
			pfn++;
		}
	}
	set_pageblock_migratetype(pfn_to_page(start), mt);
}

/*
 * Free and "alike" pages in @page's pageblock: for a MOVABLE request the
 * movable pages, for UNMOVABLE/RECLAIMABLE taking a MOVABLE block the pages
 * that are neither free nor movable, between those two none.
 */
static unsigned long block_claimable_pages(struct page *page, int start_mt,
					   int block_mt)
{
	unsigned long start = page_to_pfn(page) & ~(pageblock_nr_pages - 1);
	unsigned long free = 0, alike = 0, pfn = start;

	while (pfn < start + pageblock_nr_pages) {
		struct page *p = pfn_to_page(pfn);

		if (READ_ONCE(p->state) == PAGE_BUDDY) {
			free += 1UL << p->order;
			pfn += 1UL << p->order;
			continue;
		}
		if (start_mt == MIGRATE_MOVABLE)
			alike += READ_ONCE(p->state) == PAGE_HELD &&
				 READ_ONCE(p->alloc_mt) == MIGRATE_MOVABLE;
		else if (block_mt == MIGRATE_MOVABLE)
			alike += !(READ_ONCE(p->state) == PAGE_HELD &&
				   READ_ONCE(p->alloc_mt) == MIGRATE_MOVABLE);
		pfn++;
	}
	return free + alike;
}

/*
 * Claim a pageblock of @block_mt for @start_mt: a whole free pageblock (or
 * larger) is retyped; a smaller piece only if at least half the block is
 * free or alike, in which case its free pages move with it.
 */
static struct page *try_to_claim_block(struct zone *zone,
				       unsigned int current_order,
				       unsigned int order, int start_mt,
				       int block_mt)
{
	struct page *page = list_first_entry(
		&zone->free_area[current_order].free_list[block_mt],
		struct page, lru);

	if (current_order >= pageblock_order) {
		unsigned long nr = 1UL << (current_order - pageblock_order);

		del_page_from_free_list(page, zone, current_order);
		account_freepages(zone, -(1L << current_order));
		for (unsigned long i = 0; i < nr; i++)
			set_pageblock_migratetype(
				pfn_to_page(page_to_pfn(page) +
					    i * pageblock_nr_pages),
				start_mt);
		expand(zone, page, order, current_order, start_mt);
		page->order = (u8)order;
		return page;
	}
	if (block_claimable_pages(page, start_mt, block_mt) >=
	    pageblock_nr_pages / 2) {
		move_freepages_block(zone, page, block_mt, start_mt);
		return __rmqueue_smallest(zone, order, start_mt);
	}
	return NULL;
}

/* Fallback, first pass: claim a block, largest orders first. */
static struct page *__rmqueue_claim(struct zone *zone, unsigned int order,
				    int start_mt, unsigned int alloc_flags)
{
	unsigned int min_order = order;

	if ((alloc_flags & ALLOC_NOFRAGMENT) && order < pageblock_order)
		min_order = pageblock_order;
	for (int o = MAX_PAGE_ORDER; o >= (int)min_order; o--) {
		int fmt;
		struct page *page;

		if (!should_try_claim_block(o, start_mt))
			break;
		fmt = find_suitable_fallback(zone, o, start_mt);
		if (fmt < 0)
			continue;
		page = try_to_claim_block(zone, o, order, start_mt, fmt);
		if (page)
			return page;
	}
	return NULL;
}

/* Fallback, second pass: split a foreign block; it keeps its type. */
static struct page *__rmqueue_steal(struct zone *zone, unsigned int order,
				    int start_mt)
{
	for (unsigned int o = order; o < NR_PAGE_ORDERS; o++) {
		int fmt = find_suitable_fallback(zone, o, start_mt);

		if (fmt >= 0)
			return take_block(zone, o, order, fmt);
	}
	return NULL;
}

/*
 * Take one block of @order for @migratetype: own type first, then claim,
 * then steal (no steal under ALLOC_NOFRAGMENT), then grow a zone that
 * still has deferred memory. The 6.15 remembered fallback mode only saves
 * search time and is not modelled.
 */
struct page *__rmqueue(struct zone *zone, unsigned int order, int migratetype,
		       unsigned int alloc_flags)
{
	struct page *page;

	do {
		page = __rmqueue_smallest(zone, order, migratetype);
		if (page)
			return page;
		page = __rmqueue_claim(zone, order, migratetype, alloc_flags);
		if (page)
			return page;
		if (!(alloc_flags & ALLOC_NOFRAGMENT)) {
			page = __rmqueue_steal(zone, order, migratetype);
			if (page)
				return page;
		}
	} while (deferred_grow_zone(zone));
	return NULL;
}

/* Whether @buddy is the free head of a block of exactly @order. */
static bool page_is_buddy(const struct zone *zone, unsigned long buddy_pfn,
			  unsigned int order)
{
	struct page *buddy;

	if (buddy_pfn < zone->zone_start_pfn || buddy_pfn >= zone->deferred_pfn)
		return false;
	buddy = pfn_to_page(buddy_pfn);
	/* PageBuddy() of a page another CPU may be handing out: READ_ONCE */
	return READ_ONCE(buddy->state) == PAGE_BUDDY && buddy->order == order;
}

/*
 * Whether the block at @pfn of @order, which found no free buddy, may
 * merge soon: the buddy of the order + 1 block it belongs to is free. For
 * an upper half that block starts at its lower buddy (pfn & buddy_pfn in
 * the kernel), not at @pfn.
 */
static bool buddy_merge_likely(const struct zone *zone, unsigned long pfn,
			       unsigned int order)
{
	unsigned long higher_page_pfn = pfn & ~(1UL << order);

	if (order >= MAX_PAGE_ORDER - 1)
		return false;
	return page_is_buddy(zone, higher_page_pfn ^ (1UL << (order + 1)),
			     order + 1);
}

/*
 * Return a block to the free lists, merging it with its free buddy for as
 * long as one exists. Blocks of pageblock size or more merge across
 * migratetypes only between the three pcp types, and the buddy's blocks
 * take the freed block's type. A block that may merge soon
 * (buddy_merge_likely()) goes to the list tail, so that it stays free.
 */
void __free_one_page(struct page *page, unsigned long pfn, struct zone *zone,
		     unsigned int order, int migratetype, int fpi_flags)
{
	bool to_tail;

	/* out of line in the kernel's builds (perf profiles name it) */
	trace_nested_call();
	page->state = PAGE_TAIL;
	account_freepages(zone, 1L << order);
	if (!order && pcp_policy.ops->skip_merge_order0) {
		/*
		 * Not in mm/page_alloc.c: the no-merge policy (Aaron Lu's 2018
		 * RFC, policies/no_merge.c) reads no buddy. To the head, where
		 * the next refill takes the page back cache-hot.
		 */
		add_to_free_list(page, zone, 0, migratetype, false);
		return;
	}
	while (order < MAX_PAGE_ORDER) {
		unsigned long buddy_pfn = pfn ^ (1UL << order);
		struct page *buddy;

		if (!page_is_buddy(zone, buddy_pfn, order))
			break;
		buddy = pfn_to_page(buddy_pfn);
		if (order >= pageblock_order) {
			int buddy_mt = get_pageblock_migratetype(buddy);

			if (migratetype != buddy_mt &&
			    (migratetype >= MIGRATE_PCPTYPES ||
			     buddy_mt >= MIGRATE_PCPTYPES))
				break;
			if (migratetype != buddy_mt)
				for (unsigned long i = 0;
				     i < 1UL << (order - pageblock_order); i++)
					set_pageblock_migratetype(
						pfn_to_page(
							buddy_pfn +
							i * pageblock_nr_pages),
						migratetype);
		}
		del_page_from_free_list(buddy, zone, order);
		pfn &= buddy_pfn;
		order++;
	}
	page = pfn_to_page(pfn);

	to_tail = (fpi_flags & FPI_TO_TAIL) ||
		  buddy_merge_likely(zone, pfn, order);
	add_to_free_list(page, zone, order, migratetype, to_tail);
}

/* Free one block straight to the buddy lists, taking zone->lock. */
void free_one_page(struct zone *zone, struct page *page, unsigned long pfn,
		   unsigned int order, int fpi_flags)
{
	spin_lock(&zone->lock);
	cost(buddy_free_cost(order), 1);
	__free_one_page(page, pfn, zone, order, get_pageblock_migratetype(page),
			fpi_flags);
	spin_unlock(&zone->lock);
}

/* Free [start, end) into the buddy lists in the largest aligned blocks. */
static void free_pfn_range(struct zone *zone, unsigned long start,
			   unsigned long end)
{
	while (start < end) {
		unsigned int order = MAX_PAGE_ORDER;

		while (order && ((start & ((1UL << order) - 1)) ||
				 start + (1UL << order) > end))
			order--;
		__free_one_page(pfn_to_page(start), start, zone, order,
				get_pageblock_migratetype(pfn_to_page(start)),
				FPI_TO_TAIL);
		start += 1UL << order;
	}
}

/*
 * Hand the next section of deferred memory to the buddy lists (the model's
 * deferred_grow_zone(): struct pages are materialised here, so a huge zone
 * costs only what is used). Called with zone->lock held; returns false when
 * nothing was left to grow. Charges no simulated time: a real kernel has
 * initialised all of its memory long before a benchmark starts.
 */
bool deferred_grow_zone(struct zone *zone)
{
	unsigned long start = zone->deferred_pfn, end;

	if (start >= zone_end_pfn(zone))
		return false;
	end = min((start | (PAGES_PER_SECTION - 1)) + 1, zone_end_pfn(zone));
	sparse_populate_section(start >> PFN_SECTION_SHIFT, zone);
	WRITE_ONCE(zone->deferred_pfn, end);
	/* already counted free: __free_one_page() will count them again */
	account_freepages(zone, -(long)(end - start));
	list_checks_uncharged(true);
	free_pfn_range(zone, start, end);
	list_checks_uncharged(false);
	return true;
}
