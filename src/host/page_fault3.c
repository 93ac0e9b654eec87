// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault3: like page_fault2 but the mapping is shared,
 * so after the first pass the pages stay in the page cache and a fault
 * allocates almost nothing. An op is one page faulted.
 */
#include <errno.h>
#include <sys/mman.h>

#include "workload.h"

static int page_fault3_iteration(struct host_task *t)
{
	char *c = mmap(NULL, t->size, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd,
		       0);

	if (c == MAP_FAILED)
		return -errno;
	touch_pages(t, c, t->size, 0);
	munmap(c, t->size);
	return 0;
}

const struct host_workload host_page_fault3 = {
	.name = "page_fault3",
	.description = "Separate file shared mapping page fault",
	.default_size_mib = 128,
	.ops_are_pages = true,
	.memory_bytes = one_mapping_per_task,
	.setup = host_task_file,
	.iteration = page_fault3_iteration,
};
