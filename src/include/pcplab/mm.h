/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The model's functions, grouped by the file that defines them (the same
 * split as the kernel's mm/). Structures are in mmzone.h.
 */
#ifndef PCPLAB_MM_H
#define PCPLAB_MM_H

#include "mmzone.h"

/* alloc_flags (mm/internal.h) */
#define ALLOC_WMARK_MIN WMARK_MIN
#define ALLOC_WMARK_LOW WMARK_LOW
#define ALLOC_WMARK_HIGH WMARK_HIGH
#define ALLOC_NO_WATERMARKS 0x04
#define ALLOC_WMARK_MASK (ALLOC_NO_WATERMARKS - 1)
#define ALLOC_NOFRAGMENT 0x100

/* fpi_t flags */
#define FPI_NONE 0
#define FPI_TO_TAIL (1 << 1)

/* generations.c */
const struct kernel_gen *find_kernel_gen(const char *name);
const char *kernel_gen_names(void);

/* memmap.c: SPARSEMEM-like memory map, one section materialised at a time */
#define PFN_SECTION_SHIFT 15 /* 128 MiB sections, as x86-64 */
#define PAGES_PER_SECTION (1UL << PFN_SECTION_SHIFT)
int sparse_init(unsigned long max_pfn);
void sparse_exit(void);
unsigned long sparse_max_pages(void);
void *memblock_alloc(size_t size);
void sparse_populate_section(unsigned long section_nr, struct zone *zone);
bool pfn_section_present(unsigned long pfn);
struct zone *page_zone(const struct page *page);

extern struct page *vmemmap;

static inline struct page *pfn_to_page(unsigned long pfn)
{
	return vmemmap + pfn;
}

static inline unsigned long page_to_pfn(const struct page *page)
{
	return (unsigned long)(page - vmemmap);
}
unsigned long memmap_bytes(void);

/* mm_init.c: zones, watermarks, pageset sizing */
struct zone_desc {
	int node;
	enum zone_type type;
	unsigned long managed_pages;
};
int free_area_init(const struct zone_desc *zones, int nr_zones, int nr_cpus,
		   const int *cpu_node);
void free_area_exit(void);
int zone_batchsize(const struct zone *zone);
int zone_highsize(const struct zone *zone, int batch, int cpu_online,
		  int high_fraction);
void zone_set_pageset_high_and_batch(struct zone *zone, int cpu_online);
void setup_per_zone_wmarks(unsigned long min_free_kbytes);
unsigned long calculate_min_free_kbytes(unsigned long lowmem_kbytes);
bool high_fraction_valid(long long fraction);
int percpu_pagelist_high_fraction_set(int fraction);
const char *zone_type_name(enum zone_type type);

/* buddy.c: the free lists (split, merge, fallback) */
static inline unsigned int get_pageblock_migratetype(const struct page *page);
struct page *__rmqueue(struct zone *zone, unsigned int order, int migratetype,
		       unsigned int alloc_flags);
void __free_one_page(struct page *page, unsigned long pfn, struct zone *zone,
		     unsigned int order, int migratetype, int fpi_flags);
void free_one_page(struct zone *zone, struct page *page, unsigned long pfn,
		   unsigned int order, int fpi_flags);
void set_pageblock_migratetype(struct page *page, int migratetype);
bool deferred_grow_zone(struct zone *zone);
unsigned long zone_free_pages(const struct zone *zone);
bool zone_watermark_ok(struct zone *zone, unsigned int order,
		       unsigned long mark);

/* page_alloc.c: the per-CPU pagesets */
bool pcp_allowed_order(unsigned int order);
unsigned int order_to_pindex(int migratetype, int order);
int pindex_to_order(unsigned int pindex);
struct page *alloc_pages(unsigned int order, int migratetype);
void free_frozen_pages(struct page *page, unsigned int order);
void free_unref_folios(struct page **pages, unsigned int nr);
/* Blocks of @order a refill takes (the generation's rule or the policy's). */
int nr_pcp_alloc(struct per_cpu_pages *pcp, struct zone *zone,
		 unsigned int order);
/* The generation's rule alone, for a policy that adjusts around it. */
int __nr_pcp_alloc(struct per_cpu_pages *pcp, struct zone *zone,
		   unsigned int order);
/* Move pages other CPUs freed to @pcp onto its lists (@pcp locked). */
int pcp_absorb_remote(struct zone *zone, struct per_cpu_pages *pcp);
int rmqueue_bulk(struct zone *zone, unsigned int order, unsigned long count,
		 struct list_head *list, int migratetype,
		 unsigned int alloc_flags);
void free_pcppages_bulk(struct zone *zone, int count, struct per_cpu_pages *pcp,
			int pindex);
int decay_pcp_high(struct zone *zone, struct per_cpu_pages *pcp);
void drain_pages_zone(unsigned int cpu, struct zone *zone);
void drain_pages(unsigned int cpu);
void drain_all_pages(struct zone *zone);
void pcp_batch_scale_max_set(int value);

/* vmstat.c: the periodic per-CPU work */
bool refresh_cpu_vm_stats(bool do_pagesets);

/* swap.c: the LRU and its per-CPU batches */
/* release_pages() before v6.9: pages per lru_lock hold, bounding IRQs off */
#define SWAP_CLUSTER_MAX 32
/* munmap's mmu_gather batch: (PAGE_SIZE - its header) / sizeof(void *) */
#define MAX_GATHER_BATCH 510
struct folio_batch {
	unsigned int nr;
	struct page *pages[32]; /* PAGEVEC_SIZE up to FOLIO_BATCH_MAX */
};
void folio_add_lru(struct folio_batch *fbatch, struct page *page);
void lru_add_drain(struct folio_batch *fbatch);
void release_pages(struct page **pages, unsigned long nr);

/* memory.c: a task's memory, faulted in and unmapped */
enum fault_kind {
	FAULT_ANON, /* private anonymous: a new zeroed page */
	FAULT_FILE_PRIVATE, /* private file mapping: copy of the page cache */
	FAULT_FILE_SHARED, /* shared file mapping: the page cache page itself */
};

struct task_mm {
	struct page **pages; /* pages to free at munmap, in fault order */
	unsigned long nr;
	unsigned long cap;
	unsigned long mapped; /* pages mapped (also page cache ones) */
	struct page **file; /* the task's file's page cache, by index */
	unsigned long nr_file;
	struct folio_batch lru_add; /* the per-CPU lru_add batch */
};

/* Whether the tasks are threads of one process (mmap_lock shared). */
extern bool mm_shared_by_threads;

int task_mm_init(struct task_mm *mm, unsigned long cap);
void task_mm_exit(struct task_mm *mm);
int handle_mm_fault(struct task_mm *mm, enum fault_kind kind,
		    unsigned long index, size_t write_bytes);
void unmap_all(struct task_mm *mm);
void truncate_file(struct task_mm *mm);
unsigned long task_mm_held(const struct task_mm *mm);

/* invariants.c */
#define MAX_VIOLATIONS 16
struct invariant_report {
	bool checked;
	bool pages_conserved;
	unsigned long nr_violations;
	char violations[MAX_VIOLATIONS][160];
	unsigned long buddy_pages, pcp_pages, held_pages, deferred_pages;
	unsigned long managed_pages;
};
void check_invariants(struct invariant_report *r, unsigned long held_expected);

static inline unsigned long zone_end_pfn(const struct zone *zone)
{
	return zone->zone_start_pfn + zone->spanned_pages;
}

/* The migratetype of the pageblock holding @page, in @zone. */
static inline unsigned int get_pfnblock_migratetype(const struct zone *zone,
						    const struct page *page)
{
	return zone
		->pageblock_flags[(page_to_pfn(page) - zone->zone_start_pfn) >>
				  pageblock_order];
}

/* The page's pageblock migratetype (include/linux/pageblock-flags.h). */
static inline unsigned int get_pageblock_migratetype(const struct page *page)
{
	return get_pfnblock_migratetype(page_zone(page), page);
}

/*
 * zone_watermark_ok() with the order-0 case inline, as the kernel's
 * zone_watermark_fast(): the allocation fast path checks it every time.
 */
static inline bool zone_watermark_fast(struct zone *zone, unsigned int order,
				       unsigned long mark)
{
	if (!order)
		return READ_ONCE(zone->nr_free_pages) > (long)mark;
	return zone_watermark_ok(zone, order, mark);
}

#endif
