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

/* @size bytes of zeroed memory, THP-backed if possible; NULL on failure. */
void *huge_zalloc(size_t size)
{
	void *p;

	size = ALIGN(size, HUGE_SIZE);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, size, MADV_HUGEPAGE);
	return p;
}

/* Give back what huge_zalloc(@size) returned. */
void huge_free(void *p, size_t size)
{
	if (p)
		munmap(p, ALIGN(size, HUGE_SIZE));
}
