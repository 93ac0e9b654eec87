// SPDX-License-Identifier: GPL-2.0
/*
 * The memory map, SPARSEMEM style: struct pages live in 128 MiB sections
 * that are allocated only when a zone first hands their pages to the buddy
 * allocator (see deferred_grow_zone()). A model of a 1 TiB machine thus
 * costs memory in proportion to what its workload touches, not to its size.
 */
#include <stdlib.h>

#include <pcplab/mm.h>

struct mem_section {
	struct page *mem_map; /* PAGES_PER_SECTION pages, or NULL */
	struct zone *zone; /* the zone this section belongs to */
};

static struct mem_section *mem_section;
static unsigned long nr_mem_sections;
static unsigned long nr_present_sections;

/* Size the section table for pfns below @max_pfn. */
int sparse_init(unsigned long max_pfn)
{
	nr_mem_sections = DIV_ROUND_UP(max_pfn, PAGES_PER_SECTION);
	mem_section = calloc(nr_mem_sections, sizeof(*mem_section));
	nr_present_sections = 0;
	return mem_section ? 0 : -1;
}

/* Free every section and the table. */
void sparse_exit(void)
{
	for (unsigned long i = 0; i < nr_mem_sections; i++)
		free(mem_section[i].mem_map);
	free(mem_section);
	mem_section = NULL;
	nr_mem_sections = 0;
	nr_present_sections = 0;
}

/*
 * Allocate the struct pages of one section for @zone. Each page starts as
 * PAGE_TAIL: the caller frees the section's pfns into the buddy lists.
 */
void sparse_populate_section(unsigned long section_nr, struct zone *zone)
{
	struct mem_section *ms = &mem_section[section_nr];
	unsigned long pfn = section_nr << PFN_SECTION_SHIFT;

	BUG_ON(section_nr >= nr_mem_sections || ms->mem_map);
	ms->mem_map = calloc(PAGES_PER_SECTION, sizeof(struct page));
	BUG_ON(!ms->mem_map);
	for (unsigned long i = 0; i < PAGES_PER_SECTION; i++)
		ms->mem_map[i].pfn = pfn + i;
	ms->zone = zone;
	nr_present_sections++;
}

/* Whether the section holding @pfn has struct pages. */
bool pfn_section_present(unsigned long pfn)
{
	unsigned long nr = pfn >> PFN_SECTION_SHIFT;

	return nr < nr_mem_sections && mem_section[nr].mem_map;
}

/* The struct page of @pfn; its section must be present. */
struct page *pfn_to_page(unsigned long pfn)
{
	return &mem_section[pfn >> PFN_SECTION_SHIFT]
			.mem_map[pfn & (PAGES_PER_SECTION - 1)];
}

/* The zone @page belongs to (the kernel encodes it in page->flags). */
struct zone *page_zone(const struct page *page)
{
	return mem_section[page->pfn >> PFN_SECTION_SHIFT].zone;
}

/* Bytes of struct pages allocated so far. */
unsigned long memmap_bytes(void)
{
	return nr_present_sections * PAGES_PER_SECTION * sizeof(struct page) +
	       nr_mem_sections * sizeof(struct mem_section);
}
