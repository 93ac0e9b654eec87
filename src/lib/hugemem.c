// SPDX-License-Identifier: GPL-2.0
/*
 * Large zeroed allocations backed by transparent huge pages where the host
 * allows them (THP "madvise" or "always"). The simulator switches between
 * hundreds of CPUs, each touching its own statistics and pagesets: with
 * 4 KiB host pages every switch costs TLB misses, which in a VM are
 * two-dimensional page walks.
 */
#include <stddef.h>
#include <sys/mman.h>

#include <pcplab/types.h>

#define HUGE_SIZE (2UL << 20)

/*
 * @size bytes of zeroed memory, THP-backed if possible; NULL on failure.
 * The mapping starts on a huge page boundary: the kernel backs only the
 * aligned 2 MiB ranges of a mapping with huge pages, and a mapping of
 * 2 MiB at a 4 KiB boundary has none.
 */
void *huge_zalloc(size_t size)
{
	char *p, *start;
	size_t slack;

	size = ALIGN(size, HUGE_SIZE);
	p = mmap(NULL, size + HUGE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (char *)ALIGN((unsigned long)p, HUGE_SIZE);
	slack = (size_t)(start - p);
	if (slack)
		munmap(p, slack);
	munmap(start + size, HUGE_SIZE - slack);
	madvise(start, size, MADV_HUGEPAGE);
	return start;
}

/* Give back what huge_zalloc(@size) returned. */
void huge_free(void *p, size_t size)
{
	if (p)
		munmap(p, ALIGN(size, HUGE_SIZE));
}
