// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault1: map 128 MiB of anonymous private memory,
 * write one byte per page, unmap. An op is one page faulted.
 */
#include <errno.h>
#include <sys/mman.h>

#include "workload.h"

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

const struct host_workload host_page_fault1 = {
	.name = "page_fault1",
	.description = "Anonymous memory page fault",
	.default_size_mib = 128,
	.ops_are_pages = true,
	.memory_bytes = one_mapping_per_task,
	.iteration = page_fault1_iteration,
};
