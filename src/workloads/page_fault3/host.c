// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault3 on the running kernel (workload.c): like
 * page_fault2, but the mapping is shared.
 */
#include <errno.h>
#include <sys/mman.h>

#include <pcplab/host_workload.h>

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

DEFINE_HOST_WORKLOAD(page_fault3, .memory_bytes = one_mapping_per_task,
		     .setup = host_task_file,
		     .iteration = page_fault3_iteration);
