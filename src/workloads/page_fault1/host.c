// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault1 on the running kernel (workload.c): an
 * anonymous private mapping, one byte written per page, munmap.
 */
#include <sys/mman.h>

#include <pcplab/host_workload.h>

static int page_fault1_iteration(struct host_task *t)
{
	return map_touch_unmap(t, MAP_PRIVATE | MAP_ANONYMOUS, -1);
}

DEFINE_HOST_WORKLOAD(page_fault1, .memory_bytes = one_mapping_per_task,
		     .iteration = page_fault1_iteration);
