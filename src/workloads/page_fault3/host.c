// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault3 on the running kernel (workload.c): like
 * page_fault2, but the mapping is shared.
 */
#include <sys/mman.h>

#include <pcplab/host_workload.h>

static int page_fault3_iteration(struct host_task *t)
{
	return map_touch_unmap(t, MAP_SHARED, t->fd);
}

DEFINE_HOST_WORKLOAD(page_fault3, .memory_bytes = one_mapping_per_task,
		     .setup = host_task_file,
		     .iteration = page_fault3_iteration);
