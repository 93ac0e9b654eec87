// SPDX-License-Identifier: GPL-2.0
/*
 * A task's memory (mm/memory.c, mm/filemap.c and mm/mmap.c, reduced to what
 * the allocator sees): a write fault on anonymous memory allocates an
 * order-0 MOVABLE page and clears it; on a private file mapping it copies
 * the page cache page into a new one (COW); on a shared file mapping it
 * maps the page cache page. Page cache pages are allocated on first touch
 * and stay until the file is truncated. munmap drains the LRU batch and
 * releases every page the mapping owned.
 */
#include <errno.h>
#include <stdlib.h>

#include <pcplab/mm.h>

bool mm_shared_by_threads;
static spinlock_t mmap_lock;
static bool mmap_lock_ready;

/* Set up an empty address space (and file) for up to @cap pages. */
int task_mm_init(struct task_mm *mm, unsigned long cap)
{
	mm->pages = calloc(cap ? cap : 1, sizeof(*mm->pages));
	mm->file = calloc(cap ? cap : 1, sizeof(*mm->file));
	mm->nr = mm->mapped = mm->nr_file = 0;
	mm->cap = cap;
	mm->lru_add.nr = 0;
	if (!mmap_lock_ready) {
		spin_lock_init(&mmap_lock, LOCK_MMAP);
		mmap_lock_ready = true;
	}
	return mm->pages && mm->file ? 0 : -ENOMEM;
}

/* Free the address space's bookkeeping (unmapped and truncated). */
void task_mm_exit(struct task_mm *mm)
{
	BUG_ON(mm->nr || mm->nr_file);
	free(mm->pages);
	free(mm->file);
	mm->pages = mm->file = NULL;
}

/* Pages the task holds: mapped anonymous or COW pages and its page cache. */
unsigned long task_mm_held(const struct task_mm *mm)
{
	return mm->nr + mm->nr_file;
}

static struct page *alloc_zeroed_lru_page(struct task_mm *mm)
{
	struct page *page = alloc_pages(0, MIGRATE_MOVABLE);

	if (!page)
		return NULL;
	clear_page(page);
	folio_add_lru(&mm->lru_add, page);
	return page;
}

/* The page cache page @index of the task's file, read in if missing. */
static struct page *filemap_fault(struct task_mm *mm, unsigned long index)
{
	BUG_ON(index >= mm->cap);
	while (mm->nr_file <= index) {
		struct page *page = alloc_zeroed_lru_page(mm);

		if (!page)
			return NULL;
		mm->file[mm->nr_file++] = page;
	}
	return mm->file[index];
}

/*
 * An anonymous fault's page comes zeroed from the allocator: x86 and arm64
 * ask for __GFP_ZERO (vma_alloc_zeroed_movable_folio(), and before 6.3
 * __alloc_zeroed_user_highpage()), so the clear runs in post_alloc_hook()
 * under get_page_from_freelist(), where LKP's perf-profile counts it.
 */
static struct page *vma_alloc_zeroed_movable_folio(void)
{
	struct page *page = alloc_pages(0, MIGRATE_MOVABLE);

	if (page)
		kernel_init_pages(page);
	return page;
}

/*
 * A write fault at page @index of the mapping, then @write_bytes written
 * (1 for will-it-scale, PAGE_SIZE for a fill). The fault latency histogram
 * covers allocation, clearing or copying, and the LRU add.
 */
int handle_mm_fault(struct task_mm *mm, enum fault_kind kind,
		    unsigned long index, size_t write_bytes)
{
	u64 start = now_ns();
	struct page *page, *src = NULL;

	BUG_ON(mm->nr >= mm->cap);
	/*
	 * asm_exc_page_fault to do_user_addr_fault, and the return to user,
	 * charged together: the CPU's time is the same, and the return
	 * charged last would only shift its lock takes by a constant.
	 */
	cost(COST_FAULT_TRAP, 1);
	cost(COST_FAULT_TRAP_RETURN, 1);
	cost(COST_FAULT_BASE, 1);
	if (kind != FAULT_ANON) {
		src = filemap_fault(mm, index);
		if (!src)
			return -ENOMEM;
	}
	if (kind == FAULT_FILE_SHARED) {
		page = src;
	} else {
		page = src ? alloc_pages(0, MIGRATE_MOVABLE)
			   : vma_alloc_zeroed_movable_folio();
		if (!page)
			return -ENOMEM;
		if (src)
			copy_page(page, src);
		folio_add_lru(&mm->lru_add, page);
		mm->pages[mm->nr++] = page;
	}
	mm->mapped++;
	hist_record(&this_cpu_stats()->latency[LAT_FAULT], now_ns() - start);
	write_page(page, write_bytes);
	return 0;
}

/*
 * munmap of everything mapped: zap the ptes, then release the pages the
 * mapping owned (page cache pages stay). Threads of one process serialise
 * on mmap_lock for the VMA work.
 */
void unmap_all(struct task_mm *mm)
{
	if (!mm->mapped)
		return;
	if (mm_shared_by_threads) {
		spin_lock(&mmap_lock);
		cost(COST_MMAP, 1);
		spin_unlock(&mmap_lock);
	} else {
		cost(COST_MMAP, 1);
	}
	cost(COST_UNMAP_PAGE, mm->mapped);
	lru_add_drain(&mm->lru_add);
	release_pages(mm->pages, mm->nr);
	mm->nr = mm->mapped = 0;
}

/* Drop the task's file and its page cache (at the end of a run). */
void truncate_file(struct task_mm *mm)
{
	lru_add_drain(&mm->lru_add);
	release_pages(mm->file, mm->nr_file);
	mm->nr_file = 0;
}
