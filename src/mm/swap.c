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

/* Move a batch of new pages onto their LRU under one lru_lock hold. */
static void folio_batch_move_lru(struct folio_batch *fbatch)
{
	struct lruvec *locked = NULL;

	for (unsigned int i = 0; i < fbatch->nr; i++) {
		struct page *page = fbatch->pages[i];
		struct lruvec *lruvec = page_lruvec(page);

		if (lruvec != locked) {
			if (locked)
				spin_unlock(&locked->lru_lock);
			spin_lock(&lruvec->lru_lock);
			locked = lruvec;
		}
		cost(COST_LRU_ADD_PAGE, 1);
		page->on_lru = 1;
		lruvec->nr_pages++;
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
 * Drop the last reference to @nr mapped pages: take them off the LRU, a
 * batch per lru_lock hold (v4.18's release_pages relocked every
 * SWAP_CLUSTER_MAX pages, v6.x takes a folio_batch), and free each batch
 * through the pageset. (v4.18 freed a whole mmu_gather list at once after
 * the LRU work; the pages reach the same pageset either way.)
 */
void release_pages(struct page **pages, unsigned long nr)
{
	unsigned long chunk = (unsigned long)pcp_policy.gen.lru_release_batch;

	for (unsigned long i = 0; i < nr; i += chunk) {
		unsigned long n = min(chunk, nr - i);
		struct lruvec *locked = NULL;

		for (unsigned long j = i; j < i + n; j++) {
			struct page *page = pages[j];
			struct lruvec *lruvec;

			/* cold since they were faulted: keep misses in flight */
			if (j + 32 < nr)
				prefetchw(pages[j + 32]);
			if (!page->on_lru)
				continue;
			lruvec = page_lruvec(page);
			if (lruvec != locked) {
				if (locked)
					spin_unlock(&locked->lru_lock);
				spin_lock(&lruvec->lru_lock);
				locked = lruvec;
			}
			cost(COST_LRU_DEL_PAGE, 1);
			page->on_lru = 0;
			lruvec->nr_pages--;
		}
		if (locked)
			spin_unlock(&locked->lru_lock);
		free_unref_folios(&pages[i], (unsigned int)n);
	}
}
