// SPDX-License-Identifier: GPL-2.0
/*
 * A task's anonymous memory (mm/memory.c and mm/mmap.c, reduced to what the
 * allocator sees): a write fault allocates an order-0 MOVABLE page, clears
 * it and queues it for the LRU; munmap drains the LRU batch and releases
 * every mapped page.
 */
#include <errno.h>
#include <stdlib.h>

#include <pcplab/mm.h>

/* Set up an empty address space for up to @cap mapped pages. */
int task_mm_init(struct task_mm *mm, unsigned long cap)
{
	mm->pages = calloc(cap ? cap : 1, sizeof(*mm->pages));
	mm->nr = 0;
	mm->cap = cap;
	mm->lru_add.nr = 0;
	return mm->pages ? 0 : -ENOMEM;
}

/* Free the address space's bookkeeping (it must be unmapped). */
void task_mm_exit(struct task_mm *mm)
{
	BUG_ON(mm->nr);
	free(mm->pages);
	mm->pages = NULL;
}

/*
 * Handle a write fault on a new anonymous page and write @write_bytes of
 * it (1 for will-it-scale's page_fault1, PAGE_SIZE for a fill). The fault
 * latency histogram covers allocation, clearing and the LRU add.
 */
int do_anonymous_page(struct task_mm *mm, size_t write_bytes)
{
	u64 start = now_ns();
	struct page *page;

	BUG_ON(mm->nr >= mm->cap);
	cost(COST_FAULT_BASE, 1);
	page = alloc_pages(0, MIGRATE_MOVABLE);
	if (!page)
		return -ENOMEM;
	clear_page(page);
	folio_add_lru(&mm->lru_add, page);
	mm->pages[mm->nr++] = page;
	hist_record(&this_cpu_stats()->latency[LAT_FAULT], now_ns() - start);
	write_page(page, write_bytes);
	return 0;
}

/* munmap of everything mapped: zap the ptes, then release the pages. */
void unmap_all(struct task_mm *mm)
{
	if (!mm->nr)
		return;
	cost(COST_MMAP, 1);
	cost(COST_UNMAP_PAGE, mm->nr);
	lru_add_drain(&mm->lru_add);
	release_pages(mm->pages, mm->nr);
	mm->nr = 0;
}
