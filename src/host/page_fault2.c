// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault2: each task creates a 128 MiB file in /tmp and
 * unlinks it; each iteration maps it private, writes one byte per page
 * (a copy-on-write fault: a new anonymous page and a copy of the page
 * cache page) and unmaps. An op is one page faulted.
 */
#include <errno.h>
#include <sys/mman.h>

#include "workload.h"

/* The file's page cache and a private copy of every page. */
static u64 page_fault2_memory(u64 size, int tasks)
{
	return 2 * size * (u64)tasks;
}

static int page_fault2_iteration(struct host_task *t)
{
	char *c = mmap(NULL, t->size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		       t->fd, 0);

	if (c == MAP_FAILED)
		return -errno;
	touch_pages(t, c, t->size, 0);
	munmap(c, t->size);
	return 0;
}

const struct host_workload host_page_fault2 = {
	.name = "page_fault2",
	.description = "Separate file private mapping page fault",
	.default_size_mib = 128,
	.ops_are_pages = true,
	.memory_bytes = page_fault2_memory,
	.setup = host_task_file,
	.iteration = page_fault2_iteration,
};
