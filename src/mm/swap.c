// SPDX-License-Identifier: GPL-2.0
/*
 * The LRU side of a page fault and of munmap (mm/swap.c): new pages reach
 * the node's LRU through a per-CPU batch (lru_add), and unmapped pages
 * leave it in batches (release_pages) before they are freed. lru_lock is
 * the second contended lock of page_fault1 (Aaron Lu's 2018 tables).
 *
 * Nothing in the model scans the LRU (there is no reclaim), so it is a
 * count of pages, not a list: what matters is the lock, its batches and
 * the time spent holding it, which cost() charges per page.
 */
#include <pcplab/mm.h>

static struct lruvec *page_lruvec(struct page *page)
{
	return &page_zone(page)->zone_pgdat->lruvec;
}

/*
 * Hold @lruvec's lru_lock, first dropping @locked's if that is another
 * (the kernel's folio_lruvec_relock_irq()); @caller is the spin_lock()
 * site that lock statistics name. Returns the lruvec now locked.
 */
static struct lruvec *lruvec_relock(struct lruvec *lruvec,
				    struct lruvec *locked,
				    const struct lock_caller *caller)
{
	if (lruvec == locked)
		return locked;
	if (locked)
		spin_unlock(&locked->lru_lock);
	spin_lock_caller(&lruvec->lru_lock, caller);
	return lruvec;
}

/*
 * The check of the LRU's list_add() (lruvec_add_folio) or list_del()
 * (lruvec_del_folio) with CONFIG_DEBUG_LIST, under lru_lock: the model
 * counts the LRU's pages instead of listing them, so it charges the check
 * here (src/lib/list_debug.c makes the lists' own).
 */
static inline void lru_list_check(enum cost_kind check)
{
	if (unlikely(config_debug_list))
		cost(check, 1);
}

/* Move a batch of new pages onto their LRU under one lru_lock hold. */
static void folio_batch_move_lru(struct folio_batch *fbatch)
{
	struct lruvec *locked = NULL;

	for (unsigned int i = 0; i < fbatch->nr; i++) {
		struct page *page = fbatch->pages[i];

		locked =
			lruvec_relock(page_lruvec(page), locked, LOCK_CALLER());
		cost(COST_LRU_ADD_PAGE, 1);
		lru_list_check(COST_LIST_ADD_CHECK);
		page->on_lru = 1;
		locked->nr_pages++;
	}
	if (locked)
		spin_unlock(&locked->lru_lock);
	fbatch->nr = 0;
}

/* Queue a new page for the LRU; the batch goes over when it is full. */
void folio_add_lru(struct folio_batch *fbatch, struct page *page)
{
	fbatch->pages[fbatch->nr++] = page;
	if (fbatch->nr >= (unsigned int)pcp_policy.gen.lru_batch)
		folio_batch_move_lru(fbatch);
}

/* Flush this CPU's pending LRU additions (lru_add_drain). */
void lru_add_drain(struct folio_batch *fbatch)
{
	if (fbatch->nr)
		folio_batch_move_lru(fbatch);
}

/*
 * One gather of an unmap: its pages leave the LRU, lru_release_batch pages
 * per lru_lock hold, and then all of them go to the pageset. Up to v6.8
 * release_pages() relocked every SWAP_CLUSTER_MAX (32) pages to bound the
 * time with IRQs off, put the pages on a local list and freed the list in
 * one free_unref_page_list() after the LRU work, so a CPU's drains under
 * zone->lock come in a run after its lru_lock holds; since v6.9
 * folios_put_refs() does both per folio_batch (99fbb6bfc16f, PAGEVEC_SIZE
 * 15; 31 since 9cecde80aae0). The spec's folios_put_release chooses the
 * path, its pagevec_size the folio_batch (spec.c). The kernel counts
 * the 32 from each relock, the model from the gather's start: the same
 * while a gather's pages share a node. @caller is release_pages()'s lock
 * site, the name perf lock gives.
 */
static void release_one_gather(struct page **pages, unsigned long nr,
			       const struct lock_caller *caller)
{
	unsigned long chunk = (unsigned long)pcp_policy.gen.lru_release_batch;
	unsigned long drop_at = chunk;
	struct lruvec *locked = NULL;

	for (unsigned long i = 0; i < nr; i++) {
		struct page *page = pages[i];

		if (i == drop_at) {
			drop_at += chunk;
			if (locked)
				spin_unlock(&locked->lru_lock);
			locked = NULL;
		}
		/* cold since they were faulted: keep misses in flight */
		if (i + 32 < nr)
			prefetchw(pages[i + 32]);
		if (!page->on_lru)
			continue;
		locked = lruvec_relock(page_lruvec(page), locked, caller);
		cost(COST_LRU_DEL_PAGE, 1);
		lru_list_check(COST_LIST_DEL_CHECK);
		page->on_lru = 0;
		locked->nr_pages--;
	}
	if (locked)
		spin_unlock(&locked->lru_lock);
	free_unref_folios(pages, (unsigned int)nr);
}

/*
 * Drop the last reference to @nr mapped pages, a gather at a time: up to
 * v6.8 munmap's mmu_gather handed release_pages() MAX_GATHER_BATCH (510)
 * pages, since v6.9 a folio_batch (release_gather: the spec's
 * folios_put_release and pagevec_size, as spec.c resolves them).
 */
void release_pages(struct page **pages, unsigned long nr)
{
	unsigned long gather = (unsigned long)pcp_policy.gen.release_gather;

	for (unsigned long g = 0; g < nr; g += gather)
		release_one_gather(&pages[g], min(gather, nr - g),
				   LOCK_CALLER());
}
