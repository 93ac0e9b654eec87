// SPDX-License-Identifier: GPL-2.0
/*
 * The memory map, SPARSEMEM_VMEMMAP style: all struct pages form one
 * virtually contiguous array (so pfn_to_page() and page_to_pfn() are
 * arithmetic), but only the address space is reserved up front. A 128 MiB
 * section's struct pages get memory when a zone first hands that section
 * to the buddy allocator (deferred_grow_zone()), so a model of a 1 TiB
 * machine costs memory in proportion to what its workload touches.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include <pcplab/mm.h>

struct page *vmemmap;
static size_t vmemmap_len;
static struct zone **section_zone; /* the zone of each present section */
static unsigned long nr_mem_sections;
static unsigned long nr_present_sections;

/* Reserve the memory map for pfns below @max_pfn. */
int sparse_init(unsigned long max_pfn)
{
	nr_mem_sections = DIV_ROUND_UP(max_pfn, PAGES_PER_SECTION);
	section_zone = calloc(nr_mem_sections ? nr_mem_sections : 1,
			      sizeof(*section_zone));
	vmemmap_len = nr_mem_sections * PAGES_PER_SECTION * sizeof(struct page);
	vmemmap = vmemmap_len
			  ? mmap(NULL, vmemmap_len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0)
			  : NULL;
	nr_present_sections = 0;
	if (vmemmap == MAP_FAILED)
		vmemmap = NULL;
	return section_zone && (vmemmap || !vmemmap_len) ? 0 : -1;
}

/* Give the memory map back. */
void sparse_exit(void)
{
	if (vmemmap)
		munmap(vmemmap, vmemmap_len);
	free(section_zone);
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
