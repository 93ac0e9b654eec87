// SPDX-License-Identifier: GPL-2.0
/*
 * The memory map, SPARSEMEM_VMEMMAP style: all struct pages form one
 * virtually contiguous array (so pfn_to_page() and page_to_pfn() are
 * arithmetic), but only the address space is reserved up front. A 128 MiB
 * section's struct pages get memory when a zone first hands that section
 * to the buddy allocator (deferred_grow_zone()), so a model of a 1 TiB
 * machine costs memory in proportion to what its workload touches.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <pcplab/mm.h>
#include <pcplab/spec_keys.h>

struct page *vmemmap;
char *list_base;
static size_t region_len;
static size_t memblock_used;
static struct zone **section_zone; /* the zone of each present section */
static unsigned long nr_mem_sections;
static unsigned long nr_present_sections;

/*
 * The region list links reach (list.h): 32-bit offsets in 8-byte units.
 * Its first MEMBLOCK_BYTES hold the structures that contain list heads
 * (memblock_alloc()), the memory map follows. Only touched pages cost
 * memory. With 16-byte struct pages the map covers 8 TiB less a little.
 */
#define LIST_REACH (8ULL << 32)
#define MEMBLOCK_BYTES (256UL << 20)

/* The largest memory, in pages, whose map the list links reach. */
#define SPARSE_MAX_PAGES ((LIST_REACH - MEMBLOCK_BYTES) / sizeof(struct page))

/* The spec's memory_mib stops where the map does (spec_keys.h). */
_Static_assert(SPARSE_MAX_PAGES >> (20 - PAGE_SHIFT) == SPEC_MAX_MEMORY_MIB,
	       "SPEC_MAX_MEMORY_MIB is the memory map's reach");

unsigned long sparse_max_pages(void)
{
	return SPARSE_MAX_PAGES;
}

/*
 * Reserve the list region and the memory map for pfns below @max_pfn.
 * -E2BIG if the map is beyond the links' reach.
 */
int sparse_init(unsigned long max_pfn)
{
	size_t vmemmap_len;
	void *region;

	nr_mem_sections = DIV_ROUND_UP(max_pfn, PAGES_PER_SECTION);
	if (nr_mem_sections * PAGES_PER_SECTION > sparse_max_pages())
		return -E2BIG;
	section_zone = calloc(nr_mem_sections ? nr_mem_sections : 1,
			      sizeof(*section_zone));
	vmemmap_len = nr_mem_sections * PAGES_PER_SECTION * sizeof(struct page);
	region_len = MEMBLOCK_BYTES + vmemmap_len;
	region = mmap(NULL, region_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	nr_present_sections = 0;
	memblock_used = 64; /* offset 0 is the poison of list_del() */
	if (region == MAP_FAILED || !section_zone) {
		free(section_zone);
		section_zone = NULL;
		return -ENOMEM;
	}
	list_base = region;
	vmemmap = (struct page *)(list_base + MEMBLOCK_BYTES);
	/*
	 * Struct pages are touched all over the map (buddies, other CPUs'
	 * pages), and every simulated CPU switch touches another pageset:
	 * with 4 KiB host pages nearly every such touch is a TLB miss. Huge
	 * pages (where THP is "madvise") cost at most 2 MiB per section.
	 */
	madvise(region, region_len, MADV_HUGEPAGE);
	return 0;
}

/*
 * Zeroed, cache-line aligned memory for a structure holding list heads
 * (the kernel's boot-time allocator has the same name); never freed but
 * with the whole region. NULL when the region is full.
 */
void *memblock_alloc(size_t size)
{
	void *p;

	size = ALIGN(size, 64);
	if (!list_base || memblock_used + size > MEMBLOCK_BYTES)
		return NULL;
	p = list_base + memblock_used;
	memblock_used += size;
	return p;
}

/* Give the list region and the memory map back. */
void sparse_exit(void)
{
	if (list_base)
		munmap(list_base, region_len);
	free(section_zone);
	list_base = NULL;
	vmemmap = NULL;
	section_zone = NULL;
	nr_mem_sections = 0;
	nr_present_sections = 0;
}

/*
 * Bring one section's struct pages to life for @zone. They are zero, the
 * first touch of anonymous memory: every page PAGE_TAIL, order 0, off the
 * LRU; the caller frees the section's pfns into the buddy lists.
 */
void sparse_populate_section(unsigned long section_nr, struct zone *zone)
{
	BUG_ON(section_nr >= nr_mem_sections || section_zone[section_nr]);
	section_zone[section_nr] = zone;
	nr_present_sections++;
}

/* Whether the section holding @pfn has struct pages. */
bool pfn_section_present(unsigned long pfn)
{
	unsigned long nr = pfn >> PFN_SECTION_SHIFT;

	return nr < nr_mem_sections && section_zone[nr];
}

/* The zone @page belongs to (the kernel encodes it in page->flags). */
struct zone *page_zone(const struct page *page)
{
	return section_zone[page_to_pfn(page) >> PFN_SECTION_SHIFT];
}

/* Bytes of struct pages brought to life so far, and the section table. */
unsigned long memmap_bytes(void)
{
	return nr_present_sections * PAGES_PER_SECTION * sizeof(struct page) +
	       nr_mem_sections * sizeof(*section_zone);
}
