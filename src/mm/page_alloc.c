// SPDX-License-Identifier: GPL-2.0
/*
 * The per-CPU pagesets: allocation through rmqueue_pcplist/rmqueue_bulk,
 * freeing through free_frozen_page_commit/free_pcppages_bulk, the sizing of
 * refills and drains (nr_pcp_alloc, nr_pcp_high, nr_pcp_free), auto-tuning
 * and decay of pcp->high, and draining. Behaviour of Huang Ying's v6.7
 * auto-tuning (90b41691b988 "mm: add framework for PCP high auto-tuning",
 * 51a755c56dc0 "mm: tune PCP high automatically") through Joshua Hahn's
 * "mm/page_alloc: Batch callers of free_pcppages_bulk" (linux-mm, v5 of
 * Oct 2025, merged in v6.19), with the generation differences of
 * generations.c. Written from the behaviour those commits and threads
 * describe, not from kernel source, with the kernel's names.
 */
#include <pcplab/mm.h>

struct pcp_policy pcp_policy = {
	.ops = &default_pcp_policy,
	.high = -1,
	.relinquish = RELINQUISH_OFF,
	.pcp_batch_scale_max = 5,
	.stat_interval_ms = 1000,
};

/*
 * Set the runtime pcp_batch_scale_max (0..6). Every use site reads it
 * again, so a change takes effect at the next refill, drain or decay, as
 * the proposed vm.pcp_batch_scale_max sysctl would.
 */
void pcp_batch_scale_max_set(int value)
{
	WRITE_ONCE(pcp_policy.pcp_batch_scale_max, value);
}

/* Orders the pcp lists cache: 0..3 and the THP order (order 0 on v4.18). */
bool pcp_allowed_order(unsigned int order)
{
	if (!pcp_policy.gen.pcp_high_order)
		return order == 0;
	return order <= PAGE_ALLOC_COSTLY_ORDER || order == HPAGE_PMD_ORDER;
}

/* The pcp list of (@migratetype, @order): 3 per low order, then 2 for THP. */
unsigned int order_to_pindex(int migratetype, int order)
{
	if (order > PAGE_ALLOC_COSTLY_ORDER)
		return NR_LOWORDER_PCP_LISTS + (migratetype == MIGRATE_MOVABLE);
	return (unsigned int)(MIGRATE_PCPTYPES * order + migratetype);
}

/* The order of the pages on pcp list @pindex. */
int pindex_to_order(unsigned int pindex)
{
	if (pindex >= NR_LOWORDER_PCP_LISTS)
		return HPAGE_PMD_ORDER;
	return (int)(pindex / MIGRATE_PCPTYPES);
}

/*
 * Lock this CPU's pageset of @zone. From v6.0 the fast paths only try the
 * lock, and fall back to the buddy lists when an interrupted holder or a
 * remote drain has it; before, they disabled interrupts and could not fail.
 */
static __always_inline struct per_cpu_pages *
pcp_spin_trylock_this(struct zone *zone)
{
	struct per_cpu_pages *pcp = per_cpu_ptr(zone, smp_processor_id());

	if (!pcp_policy.gen.pcp_trylock) {
		pcp_spin_lock(&pcp->lock);
		return pcp;
	}
	if (pcp_spin_trylock(&pcp->lock))
		return pcp;
	count_event(PCP_TRYLOCK_FAIL, 1);
	return NULL;
}

/* The runtime scale max, and the largest alloc_factor it allows. */
static inline int scale_max(void)
{
	return pcp_batch_scale_max();
}

/*
 * Move up to @count blocks of @order from the buddy lists to @list under
 * one hold of zone->lock. Returns the number of blocks moved.
 */
int rmqueue_bulk(struct zone *zone, unsigned int order, unsigned long count,
		 struct list_head *list, int migratetype,
		 unsigned int alloc_flags)
{
	u64 start;
	unsigned long i;

	trace_func_entry(TRACED_RMQUEUE_BULK);
	start = now_ns();
	spin_lock(&zone->lock);
	for (i = 0; i < count; i++) {
		struct page *page =
			__rmqueue(zone, order, migratetype, alloc_flags);

		if (!page)
			break;
		cost(COST_BUDDY_ALLOC_PAGE, 1);
		page->state = PAGE_PCP;
		/* expand() hands out ascending addresses: keep them in order */
		list_add_tail(&page->lru, list);
	}
	hist_record(&this_cpu_stats()->latency[LAT_RMQUEUE_BULK_HOLD],
		    spin_hold_ns(&zone->lock));
	spin_unlock(&zone->lock);

	count_event(PCP_REFILLS, 1);
	count_event(PCP_PAGES_REFILLED, i << order);
	hist_record(&this_cpu_stats()->latency[LAT_RMQUEUE_BULK],
		    now_ns() - start);
	trace_func_return(TRACED_RMQUEUE_BULK);
	return (int)i;
}

/*
 * How many blocks of @order to refill with. v6.7+: batch << alloc_factor
 * for order 0 (alloc_factor grows by one per refill without an intervening
 * free, up to pcp_batch_scale_max), bounded by the room left under high;
 * high itself grows by the refill while the zone is not below its high
 * watermark. Before v6.7 the refill is a fixed batch; no_alloc_scaling
 * keeps the factor at 0, as before c0a242394cb9 ("mm, page_alloc: scale
 * the number of pages that are batch allocated").
 */
int __nr_pcp_alloc(struct per_cpu_pages *pcp, struct zone *zone,
		   unsigned int order)
{
	int base = READ_ONCE(pcp->batch);
	int high_min, high_max, high, nr, room, factor;

	if (!pcp_policy.gen.high_autotune) {
		if (!pcp_policy.gen.pcp_high_order)
			return base;
		return base > 1 ? max(base >> order, 2) : 1;
	}

	high_min = READ_ONCE(pcp->high_min);
	high_max = READ_ONCE(pcp->high_max);
	high = pcp->high = clamp(pcp->high, high_min, high_max);
	if (unlikely(high < base))
		return 1; /* the boot pageset, or pcp disabled */

	/*
	 * The kernel's alloc_factor never exceeds the build-time scale max;
	 * with a runtime knob it can, right after the knob was lowered, so
	 * bound the factor at its use as well as at its growth.
	 */
	factor = min((int)pcp->alloc_factor, scale_max());
	if (pcp_policy.no_alloc_scaling)
		factor = 0;
	nr = order ? base : base << factor;

	if (high_min != high_max && !test_bit(ZONE_BELOW_HIGH, &zone->flags))
		high = pcp->high = min(high + nr, high_max);

	if (!order) {
		room = max(high - pcp->count - base, base);
		if (nr <= room && pcp->alloc_factor < scale_max())
			pcp->alloc_factor++;
		nr = min(nr, room);
	}
	if (nr > 1)
		nr = max(nr >> order, 2);
	return nr;
}

/* Blocks a refill of @order takes: the policy's rule, else the generation's. */
int nr_pcp_alloc(struct per_cpu_pages *pcp, struct zone *zone,
		 unsigned int order)
{
	if (pcp_policy.ops->nr_alloc)
		return pcp_policy.ops->nr_alloc(pcp, zone, order);
	return __nr_pcp_alloc(pcp, zone, order);
}

/*
 * How many times this CPU has waited for zone->lock: a policy's signal
 * that a refill or drain found it held. Read only for a policy that asks,
 * so the generation's refill and drain paths pay nothing for it.
 */
static inline u64 zone_lock_waits(void)
{
	if (!pcp_policy.ops->zone_locked)
		return 0;
	return lock_stat_totals(&this_cpu_stats()->lock[LOCK_ZONE]).contended;
}

/* Tell the policy that a refill or drain of @pcp took zone->lock. */
static inline void policy_zone_locked(struct per_cpu_pages *pcp,
				      struct zone *zone, u64 waits_before)
{
	if (pcp_policy.ops->zone_locked)
		pcp_policy.ops->zone_locked(pcp, zone,
					    zone_lock_waits() != waits_before);
}

/* Refill an empty pcp list from the buddy (out of line: the slow path). */
static __attribute__((noinline)) void
rmqueue_pcplist_refill(struct zone *zone, unsigned int order, int migratetype,
		       unsigned int alloc_flags, struct per_cpu_pages *pcp,
		       struct list_head *list)
{
	u64 waits = zone_lock_waits();
	int got;

	if (pcp_policy.ops->refill) {
		got = pcp_policy.ops->refill(zone, order, migratetype,
					     alloc_flags, pcp, list);
	} else {
		got = rmqueue_bulk(zone, order, nr_pcp_alloc(pcp, zone, order),
				   list, migratetype, alloc_flags);
	}
	policy_zone_locked(pcp, zone, waits);
	pcp->count += got << order;
}

/* Pop a block from @list, refilling it from the buddy when empty. */
static __always_inline struct page *
__rmqueue_pcplist(struct zone *zone, unsigned int order, int migratetype,
		  unsigned int alloc_flags, struct per_cpu_pages *pcp,
		  struct list_head *list)
{
	struct page *page;

	if (list_empty(list)) {
		rmqueue_pcplist_refill(zone, order, migratetype, alloc_flags,
				       pcp, list);
		if (unlikely(list_empty(list)))
			return NULL;
	}
	page = list_first_entry(list, struct page, lru);
	list_del(&page->lru);
	pcp->count -= 1 << order;
	return page;
}

/* Allocate from this CPU's pageset; NULL if its lock is busy or empty. */
static __always_inline struct page *rmqueue_pcplist(struct zone *zone,
						    unsigned int order,
						    int migratetype,
						    unsigned int alloc_flags)
{
	struct per_cpu_pages *pcp;
	struct list_head *list;
	struct page *page;

	pcp = pcp_spin_trylock_this(zone);
	if (!pcp)
		return NULL;
	cost(COST_PCP_ALLOC, 1);
	/* Allocating ends a run of frees: their drain scaling decays. */
	if (pcp_policy.gen.high_autotune)
		pcp->free_count >>= 1;
	else
		pcp->free_factor >>= 1;
	list = &pcp->lists[order_to_pindex(migratetype, (int)order)];
	page = __rmqueue_pcplist(zone, order, migratetype, alloc_flags, pcp,
				 list);
	pcp_spin_unlock(&pcp->lock);
	return page;
}

/* Allocate one block straight from the buddy lists under zone->lock. */
static __attribute__((noinline)) struct page *
rmqueue_buddy(struct zone *zone, unsigned int order, int migratetype,
	      unsigned int alloc_flags)
{
	struct page *page;

	spin_lock(&zone->lock);
	page = __rmqueue(zone, order, migratetype, alloc_flags);
	if (page)
		cost(COST_BUDDY_ALLOC_PAGE, 1);
	spin_unlock(&zone->lock);
	count_event(PCP_BUDDY_FALLBACK, 1);
	return page;
}

static __always_inline struct page *rmqueue(struct zone *zone,
					    unsigned int order, int migratetype,
					    unsigned int alloc_flags)
{
	struct page *page = NULL;

	if (pcp_allowed_order(order))
		page = rmqueue_pcplist(zone, order, migratetype, alloc_flags);
	if (!page)
		page = rmqueue_buddy(zone, order, migratetype, alloc_flags);
	return page;
}

/*
 * Walk this node's zonelist (its zones from the highest, then the other
 * nodes') and allocate from the first zone that passes the watermark. A
 * zone found below its high watermark is flagged BELOW_HIGH, which stops
 * pcp->high from growing and shrinks it on frees (v6.7+); a zone above it
 * needs no further check.
 */
static __always_inline struct page *
get_page_from_freelist(unsigned int order, unsigned int alloc_flags,
		       int migratetype)
{
	struct pglist_data *local = NODE_DATA(cpu_to_node(smp_processor_id()));
	struct zone **z = local->zonelist;

	for (; *z; z++) {
		struct zone *zone = *z;
		struct page *page;

		if (pcp_policy.gen.high_autotune &&
		    !test_bit(ZONE_BELOW_HIGH, &zone->flags)) {
			if (zone_watermark_fast(zone, order,
						high_wmark_pages(zone)))
				goto try_this_zone;
			set_bit(ZONE_BELOW_HIGH, &zone->flags);
		}
		if (!(alloc_flags & ALLOC_NO_WATERMARKS) &&
		    !zone_watermark_fast(
			    zone, order,
			    wmark_pages(zone, alloc_flags & ALLOC_WMARK_MASK)))
			continue;
try_this_zone:
		page = rmqueue(zone, order, migratetype, alloc_flags);
		if (page) {
			count_event(zone->zone_pgdat == local ? NUMA_HIT
							      : NUMA_MISS,
				    1);
			return page;
		}
	}
	return NULL;
}

/*
 * The slow path (__alloc_pages_slowpath): there is no reclaim in the
 * model, so below the low watermark the request retries at the min
 * watermark and then fails. Out of line, to keep the fast path short.
 */
static __attribute__((noinline)) struct page *
alloc_pages_slowpath(unsigned int order, int migratetype)
{
	struct page *page;

	page = get_page_from_freelist(order, ALLOC_WMARK_MIN, migratetype);
	if (!page)
		count_event(ALLOC_FAIL, 1);
	return page;
}

/* Allocate a block of 2^@order pages of @migratetype for the current task. */
struct page *alloc_pages(unsigned int order, int migratetype)
{
	struct page *page;

	page = get_page_from_freelist(order, ALLOC_WMARK_LOW, migratetype);
	if (unlikely(!page)) {
		page = alloc_pages_slowpath(order, migratetype);
		if (!page)
			return NULL;
	}
	/* racing with lockless PageBuddy() reads of a merging CPU: READ_ONCE */
	WRITE_ONCE(page->state, PAGE_HELD);
	WRITE_ONCE(page->order, (u8)order);
	WRITE_ONCE(page->alloc_mt, (u8)migratetype);
	count_event(PGALLOC, 1UL << order);
	return page;
}

/*
 * The kernel's prefetch_buddy() fetches the order-0 buddy of a page to
 * free, which shares a cache line with a 16-byte struct page. The merges
 * of pages that were mapped together climb several orders, and each buddy
 * is a dependent, usually cold load: fetch the lines of the next few
 * orders' buddies too.
 */
static __always_inline void prefetch_buddies(unsigned long pfn)
{
	for (unsigned int order = 2; order <= 5; order++)
		prefetchw(pfn_to_page(pfn ^ (1UL << order)));
}

/* The page freed to @pcp @ahead frees after @page (a hint: may be stale). */
static __always_inline struct page *
pcp_recent_page(const struct per_cpu_pages *pcp, const struct page *page,
		u32 ahead)
{
	return pfn_to_page(pcp->recent[(page->pcp_seq + ahead) % PCP_RECENT]);
}

/*
 * A drain walks cold pages whose addresses the list gives one at a time:
 * each is known only once the previous one's links have arrived. The
 * pageset's ring of recent frees names them in advance, so a drain keeps
 * DRAIN_AHEAD pages and the buddies of half as many in flight, and their
 * misses overlap instead of following each other.
 */
#define DRAIN_AHEAD 8

/* Start a drain at @tail: fetch it, the pages after it, and buddies. */
static __always_inline void
prefetch_drain_start(const struct per_cpu_pages *pcp, const struct page *tail)
{
	prefetchw(tail);
	prefetch_buddies(page_to_pfn(tail));
	for (u32 ahead = 1; ahead < DRAIN_AHEAD; ahead++)
		prefetchw(pcp_recent_page(pcp, tail, ahead));
	for (u32 ahead = 1; ahead < DRAIN_AHEAD / 2; ahead++)
		prefetch_buddies(
			page_to_pfn(pcp_recent_page(pcp, tail, ahead)));
}

/*
 * One step of a drain at @page of @list: fetch the page DRAIN_AHEAD on and
 * the buddies of the page half as far, while the ring agrees with the list
 * about the next page. Where it does not (pages a refill appended to the
 * tail, or more frees since @page than the ring holds: the large pcp->high
 * of v6.7+ auto-tuning), fetch the next page and its buddies from the list.
 */
static __always_inline void prefetch_drain_step(const struct per_cpu_pages *pcp,
						const struct page *page,
						const struct list_head *list)
{
	const struct list_head *next = list_at(page->lru.prev);

	if (next == list)
		return;
	if (pcp_recent_page(pcp, page, 1) ==
	    list_entry(next, struct page, lru)) {
		prefetchw(pcp_recent_page(pcp, page, DRAIN_AHEAD));
		prefetch_buddies(page_to_pfn(
			pcp_recent_page(pcp, page, DRAIN_AHEAD / 2)));
	} else {
		prefetchw(next);
		prefetch_buddies(
			page_to_pfn(list_entry(next, struct page, lru)));
	}
}

/* One hold of zone->lock by free_pcppages_bulk, for its histogram. */
static inline void record_free_hold(struct zone *zone)
{
	hist_record(&this_cpu_stats()->latency[LAT_FREE_PCPPAGES_BULK_HOLD],
		    spin_hold_ns(&zone->lock));
}

/*
 * Return @count base pages from @pcp to the buddy lists under one hold of
 * zone->lock (or several with the "contended" relinquish policy of the
 * 2025 v1 posting). Lists are visited round robin starting at @pindex, the
 * list just freed into; each is emptied from its tail (the coldest pages)
 * before the next is visited. Each page's pageblock type is read again.
 */
void free_pcppages_bulk(struct zone *zone, int count, struct per_cpu_pages *pcp,
			int pindex)
{
	u64 start;
	int batch = READ_ONCE(pcp->batch);
	int since_break = 0, freed = 0;
	bool relinquish = pcp_policy.relinquish == RELINQUISH_CONTENDED;

	trace_func_entry(TRACED_FREE_PCPPAGES_BULK);
	start = now_ns();
	count = min(pcp->count, count);
	pindex--;
	spin_lock(&zone->lock);
	while (count > 0) {
		struct list_head *list;
		int order, nr_pages;
		enum cost_kind free_cost;
		int visited = 0;

		do {
			if (++pindex >= NR_PCP_LISTS)
				pindex = 0;
			list = &pcp->lists[pindex];
			/* pcp->count promised pages that no list holds */
			BUG_ON(++visited > NR_PCP_LISTS);
		} while (list_empty(list));
		order = pindex_to_order((unsigned int)pindex);
		nr_pages = 1 << order;
		free_cost = buddy_free_cost(order);
		prefetch_drain_start(pcp,
				     list_last_entry(list, struct page, lru));

		do {
			struct page *page =
				list_last_entry(list, struct page, lru);

			prefetch_drain_step(pcp, page, list);
			list_del(&page->lru);
			count -= nr_pages;
			pcp->count -= nr_pages;
			freed += nr_pages;
			cost(free_cost, nr_pages);
			__free_one_page(page, page_to_pfn(page), zone, order,
					get_pfnblock_migratetype(zone, page),
					FPI_NONE);
			since_break += nr_pages;
			if (relinquish && since_break >= batch && count > 0 &&
			    spin_is_contended(&zone->lock)) {
				record_free_hold(zone);
				spin_unlock(&zone->lock);
				count_event(ZONE_LOCK_RELINQUISH, 1);
				spin_lock(&zone->lock);
				since_break = 0;
			}
		} while (count > 0 && !list_empty(list));
	}
	record_free_hold(zone);
	spin_unlock(&zone->lock);

	count_event(PCP_DRAINS, 1);
	count_event(PCP_PAGES_DRAINED, (u64)freed);
	hist_record(&this_cpu_stats()->latency[LAT_FREE_PCPPAGES_BULK],
		    now_ns() - start);
	trace_func_return(TRACED_FREE_PCPPAGES_BULK);
}

/*
 * The drain threshold for a free, with the v6.7 auto-tuning of pcp->high
 * (51a755c56dc0 "mm: tune PCP high automatically", 57c0419c5f0e "mm, pcp:
 * decrease PCP high if free pages < high watermark"): the first matching
 * rule wins. Before v6.7: high, or min(4 * batch, high) while kswapd
 * reclaims the zone, or 0 for free_high.
 */
static __always_inline int nr_pcp_high(struct per_cpu_pages *pcp,
				       struct zone *zone, int batch,
				       bool free_high)
{
	int high_min, high_max, high, fc;

	if (pcp_policy.ops->nr_high)
		return pcp_policy.ops->nr_high(pcp, zone, batch, free_high);
	if (!pcp_policy.gen.high_autotune) {
		high = READ_ONCE(pcp->high);
		if (!high || free_high)
			return 0;
		if (test_bit(ZONE_RECLAIM_ACTIVE, &zone->flags))
			return min(batch << 2, high);
		return high;
	}

	high_min = READ_ONCE(pcp->high_min);
	high_max = READ_ONCE(pcp->high_max);
	high = pcp->high = clamp(pcp->high, high_min, high_max);
	if (unlikely(!high))
		return 0;

	if (unlikely(free_high)) {
		pcp->high = max(high - (batch << scale_max()), high_min);
		return 0;
	}
	/* Reclaim is under way: shrink high and drain early. */
	if (test_bit(ZONE_RECLAIM_ACTIVE, &zone->flags)) {
		fc = max(pcp->free_count, batch);
		pcp->high = max(high - fc, high_min);
		return min(batch << 2, pcp->high);
	}
	if (high_min == high_max)
		return high;
	/* Free memory is short: give pages back, down to high_min. */
	if (test_bit(ZONE_BELOW_HIGH, &zone->flags)) {
		fc = max(pcp->free_count, batch);
		pcp->high = max(high - fc, high_min);
		return max(pcp->count, high_min);
	}
	/* A long run of frees overflowed high: let high follow it. */
	if (pcp->count >= high) {
		int need = pcp->free_count + batch;

		if (pcp->high < need)
			pcp->high = clamp(need, high_min, high_max);
	}
	return high;
}

/*
 * How many pages to drain once count reached @high. v6.7+: the length of
 * the current run of frees (free_count), at least batch, leaving at least
 * batch behind; with free_high as much as batch << scale max. v5.14..v6.6:
 * batch << free_factor, the factor growing while it fits. v4.18: batch.
 */
static int nr_pcp_free(struct per_cpu_pages *pcp, int batch, int high,
		       bool free_high)
{
	const struct kernel_gen *gen = &pcp_policy.gen;
	int scaled;

	if (pcp_policy.ops->nr_free)
		return pcp_policy.ops->nr_free(pcp, batch, high, free_high);
	if (!gen->high_from_zone)
		return batch;
	if (unlikely(free_high))
		return gen->high_autotune
			       ? min(pcp->count, batch << scale_max())
			       : pcp->count;
	if (unlikely(high < batch))
		return 1;
	if (pcp_policy.no_free_scaling)
		return clamp(batch, batch, high - batch);
	if (gen->high_autotune)
		return clamp(pcp->free_count, batch, high - batch);

	scaled = batch << pcp->free_factor;
	if (scaled < high - batch)
		pcp->free_factor++;
	return clamp(scaled, batch, high - batch);
}

/*
 * Whether this free of @order flushes the pcp (free_high): consecutive
 * high-order frees, as 6ccdcb6d3a74 ("mm, pcp: reduce detecting time of
 * consecutive high order page freeing") and 362d37a106dd ("mm, pcp: reduce
 * lock contention for draining high-order pages") made it in v6.7, with the
 * v6.16 threshold of c544a952ba61 ("mm: pcp: increase pcp->free_count
 * threshold to trigger free_high"). Before v6.7: free_factor > 0.
 */
static __always_inline bool pcp_free_high(struct per_cpu_pages *pcp,
					  unsigned int order, int batch)
{
	bool high_order = order && order <= PAGE_ALLOC_COSTLY_ORDER;
	bool free_high = false;

	if (!pcp_policy.gen.high_autotune)
		return high_order && pcp->free_factor;

	if (high_order) {
		int threshold = pcp_policy.gen.free_high_v616
					? batch + pcp->high_min / 2
					: batch;

		free_high = pcp->free_count >= threshold &&
			    (pcp->flags & PCPF_PREV_FREE_HIGH_ORDER) &&
			    (!(pcp->flags & PCPF_FREE_HIGH_BATCH) ||
			     pcp->count >= batch);
		pcp->flags |= PCPF_PREV_FREE_HIGH_ORDER;
	} else {
		pcp->flags &= ~PCPF_PREV_FREE_HIGH_ORDER;
	}
	return free_high;
}

/* Clear BELOW_HIGH once a drain has brought the zone over its high mark. */
static void clear_below_high(struct zone *zone)
{
	if (test_bit(ZONE_BELOW_HIGH, &zone->flags) &&
	    zone_watermark_ok(zone, 0, high_wmark_pages(zone)))
		clear_bit(ZONE_BELOW_HIGH, &zone->flags);
}

/*
 * The drain half of free_frozen_page_commit(), out of line so that the
 * common free (count below the threshold) stays short. Returns false if
 * the pcp lock was dropped (v6.19 batching: the drain runs in pcp->batch
 * chunks, releasing both locks between chunks, and stops if the pcp lock
 * cannot be taken again).
 */
static __attribute__((noinline)) bool
free_frozen_page_drain(struct zone *zone, struct per_cpu_pages *pcp, int pindex,
		       int batch, int high, bool free_high)
{
	int to_free = nr_pcp_free(pcp, batch, high, free_high);
	u64 waits = zone_lock_waits();

	if (pcp_policy.relinquish != RELINQUISH_BATCHED) {
		free_pcppages_bulk(zone, to_free, pcp, pindex);
		policy_zone_locked(pcp, zone, waits);
	} else {
		while (to_free > 0 && pcp->count > 0) {
			int chunk = min(to_free, batch);

			free_pcppages_bulk(zone, chunk, pcp, pindex);
			policy_zone_locked(pcp, zone, waits);
			waits = zone_lock_waits();
			to_free -= chunk;
			if (!to_free || !pcp->count)
				break;
			pcp_spin_unlock(&pcp->lock);
			if (!pcp_spin_trylock(&pcp->lock)) {
				count_event(PCP_TRYLOCK_FAIL, 1);
				clear_below_high(zone);
				return false;
			}
		}
	}
	clear_below_high(zone);
	return true;
}

/*
 * Put a page on this CPU's pageset and drain if count reached the
 * threshold. Returns false if the drain dropped the pcp lock.
 */
static __always_inline bool
free_frozen_page_commit(struct zone *zone, struct per_cpu_pages *pcp,
			struct page *page, int migratetype, unsigned int order)
{
	int pindex = (int)order_to_pindex(migratetype, (int)order);
	int batch = READ_ONCE(pcp->batch);
	int high;
	bool free_high;

	cost(COST_PCP_FREE, 1);
	count_event(PGFREE, 1UL << order);
	pcp->alloc_factor >>= 1;
	WRITE_ONCE(page->state, PAGE_PCP);
	WRITE_ONCE(page->order, (u8)order);
	list_add(&page->lru, &pcp->lists[pindex]);
	pcp->count += 1 << order;
	/* for the drain's prefetches (model only, see per_cpu_pages) */
	page->pcp_seq = pcp->recent_seq;
	pcp->recent[pcp->recent_seq++ % PCP_RECENT] = (u32)page_to_pfn(page);

	free_high = pcp_free_high(pcp, order, batch);
	if (pcp_policy.gen.high_autotune &&
	    pcp->free_count < (batch << scale_max()))
		pcp->free_count += 1 << order;

	if (!pcp_policy.gen.high_from_zone) {
		if (pcp->count < READ_ONCE(pcp->high))
			return true;
		free_pcppages_bulk(zone, batch, pcp, pindex);
		return true;
	}

	high = nr_pcp_high(pcp, zone, batch, free_high);
	if (pcp->count < high)
		return true;
	return free_frozen_page_drain(zone, pcp, pindex, batch, high,
				      free_high);
}

/* The pcp list type a page of pageblock type @mt is freed to, or -1. */
static int pcp_free_migratetype(int mt)
{
	/* HIGHATOMIC (and CMA) pages ride the MOVABLE list */
	return mt < MIGRATE_PCPTYPES ? mt : MIGRATE_MOVABLE;
}

/*
 * Move the order-0 pages other CPUs freed to @pcp (pcp->remote) onto its
 * lists, with @pcp locked. Returns how many there were.
 */
int pcp_absorb_remote(struct zone *zone, struct per_cpu_pages *pcp)
{
	struct page *page, *next;
	int nr;

	if (!READ_ONCE(pcp->nr_remote))
		return 0;
	/* list heads live in the list region: move page by page, locked */
	spin_lock(&pcp->remote_lock);
	list_for_each_entry_safe (page, next, &pcp->remote, lru) {
		int mt = pcp_free_migratetype(
			get_pfnblock_migratetype(zone, page));

		list_move(&page->lru, &pcp->lists[order_to_pindex(mt, 0)]);
		cost(COST_PCP_FREE, 1);
	}
	nr = pcp->nr_remote;
	pcp->nr_remote = 0;
	spin_unlock(&pcp->remote_lock);
	pcp->count += nr;
	return nr;
}

/*
 * Free a block that no one references any more (__free_frozen_pages):
 * to this CPU's pageset if the order is cached there and its lock is free,
 * else straight to the buddy lists.
 */
void free_frozen_pages(struct page *page, unsigned int order)
{
	struct zone *zone = page_zone(page);
	struct per_cpu_pages *pcp;
	int mt;

	if (!pcp_allowed_order(order)) {
		count_event(PGFREE, 1UL << order);
		free_one_page(zone, page, page_to_pfn(page), order, FPI_NONE);
		return;
	}
	if (pcp_policy.ops->free_remote &&
	    pcp_policy.ops->free_remote(zone, page, order))
		return;
	mt = pcp_free_migratetype(get_pfnblock_migratetype(zone, page));
	pcp = pcp_spin_trylock_this(zone);
	if (!pcp) {
		count_event(PGFREE, 1UL << order);
		count_event(PCP_BUDDY_FALLBACK, 1);
		free_one_page(zone, page, page_to_pfn(page), order, FPI_NONE);
		return;
	}
	if (free_frozen_page_commit(zone, pcp, page, mt, order))
		pcp_spin_unlock(&pcp->lock);
}

/*
 * Free a batch of order-0 pages (free_unref_folios): one pcp lock hold for
 * the batch, re-taken when the zone changes or a commit dropped it.
 */
void free_unref_folios(struct page **pages, unsigned int nr)
{
	/* read once: the calls below could change it as far as C knows */
	bool (*free_remote)(struct zone *, struct page *, unsigned int) =
		pcp_policy.ops->free_remote;
	struct per_cpu_pages *pcp = NULL;
	struct zone *locked_zone = NULL;

	for (unsigned int i = 0; i < nr; i++) {
		struct page *page = pages[i];
		struct zone *zone = page_zone(page);

		/*
		 * A gather's struct pages went cold while its lru_lock holds
		 * let the other CPUs run: keep many misses in flight.
		 */
		if (i + 16 < nr)
			prefetchw(pages[i + 16]);
		if (free_remote && free_remote(zone, page, 0))
			continue;
		int mt = pcp_free_migratetype(
			get_pfnblock_migratetype(zone, page));

		if (zone != locked_zone && pcp) {
			pcp_spin_unlock(&pcp->lock);
			pcp = NULL;
		}
		if (!pcp) {
			pcp = pcp_spin_trylock_this(zone);
			locked_zone = zone;
			if (!pcp) {
				count_event(PGFREE, 1);
				count_event(PCP_BUDDY_FALLBACK, 1);
				free_one_page(zone, page, page_to_pfn(page), 0,
					      FPI_NONE);
				continue;
			}
		}
		if (!free_frozen_page_commit(zone, pcp, page, mt, 0))
			pcp = NULL;
	}
	if (pcp)
		pcp_spin_unlock(&pcp->lock);
}

/*
 * The vmstat worker's periodic decay of pcp->high (v6.7+): high moves an
 * eighth of the way down to high_min (faster if count is far below it) and
 * pages above the new high are drained, in one hold before v6.19, in
 * pcp->batch chunks with the 6.19 batching. Returns non-zero while there is
 * more to do.
 */
int decay_pcp_high(struct zone *zone, struct per_cpu_pages *pcp)
{
	int high_min, batch, to_drain, todo = 0;

	if (!pcp_policy.gen.high_autotune || pcp_policy.ops->no_time_decay)
		return 0;
	high_min = READ_ONCE(pcp->high_min);
	batch = READ_ONCE(pcp->batch);

	if (pcp->high > high_min) {
		pcp->high = max3(pcp->count - (batch << scale_max()),
				 pcp->high - (pcp->high >> 3), high_min);
		if (pcp->high > high_min)
			todo++;
	}

	to_drain = pcp->count - pcp->high;
	if (to_drain <= 0)
		return todo;
	todo++;
	if (pcp_policy.relinquish != RELINQUISH_BATCHED) {
		pcp_spin_lock(&pcp->lock);
		free_pcppages_bulk(zone, to_drain, pcp, 0);
		pcp_spin_unlock(&pcp->lock);
		return todo;
	}
	while (to_drain > 0) {
		int chunk = min(to_drain, batch);

		pcp_spin_lock(&pcp->lock);
		free_pcppages_bulk(zone, chunk, pcp, 0);
		pcp_spin_unlock(&pcp->lock);
		to_drain -= chunk;
	}
	return todo;
}

/*
 * Empty @cpu's pageset of @zone. From v6.10 in chunks of batch << scale
 * max per zone->lock hold, re-reading count under the pcp lock each time
 * (the v6.11 fix); before, the whole count in one hold.
 */
void drain_pages_zone(unsigned int cpu, struct zone *zone)
{
	struct per_cpu_pages *pcp = per_cpu_ptr(zone, (int)cpu);
	int count;

	do {
		pcp_spin_lock(&pcp->lock);
		pcp_absorb_remote(zone, pcp);
		count = pcp->count;
		if (count) {
			int to_drain = count;

			if (pcp_policy.gen.drain_chunked)
				to_drain = min(count, READ_ONCE(pcp->batch)
							      << scale_max());
			free_pcppages_bulk(zone, to_drain, pcp, 0);
			count -= to_drain;
		}
		pcp_spin_unlock(&pcp->lock);
	} while (count);
}

/* Empty every pageset of @cpu. */
void drain_pages(unsigned int cpu)
{
	struct pglist_data *pgdat;
	struct zone *zone;

	for (int nid = 0; nid < nr_node_ids; nid++) {
		pgdat = NODE_DATA(nid);
		for_each_populated_zone_of (pgdat, zone)
			drain_pages_zone(cpu, zone);
	}
}

/*
 * Drain every CPU's pageset of @zone (every zone if NULL) from the calling
 * context, as __drain_all_pages() has done without IPIs since v6.0.
 */
void drain_all_pages(struct zone *zone)
{
	int cpu;

	for_each_cpu (cpu) {
		if (zone)
			drain_pages_zone((unsigned int)cpu, zone);
		else
			drain_pages((unsigned int)cpu);
	}
}
