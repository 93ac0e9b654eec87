// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault1 on the running kernel (workload.c): an
 * anonymous private mapping, one byte written per page, munmap.
 */
#include <errno.h>
#include <sys/mman.h>

#include <pcplab/host_workload.h>

static int page_fault1_iteration(struct host_task *t)
{
	char *c = mmap(NULL, t->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return -errno;
	touch_pages(t, c, t->size, 0);
	munmap(c, t->size);
	return 0;
}

DEFINE_HOST_WORKLOAD(page_fault1, .memory_bytes = one_mapping_per_task,
		     .iteration = page_fault1_iteration);
