// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault2 on the running kernel (workload.c): each task
 * creates and unlinks its file in $TMPDIR; each iteration maps it private,
 * writes one byte per page (a copy-on-write fault: a new anonymous page
 * and a copy of the page cache page) and unmaps.
 */
#include <sys/mman.h>

#include <pcplab/host_workload.h>

/* The file's page cache and a private copy of every page. */
static u64 page_fault2_memory(u64 size, int tasks)
{
	return 2 * size * (u64)tasks;
}

static int page_fault2_iteration(struct host_task *t)
{
	return map_touch_unmap(t, MAP_PRIVATE, t->fd);
}

DEFINE_HOST_WORKLOAD(page_fault2, .memory_bytes = page_fault2_memory,
		     .setup = host_task_file,
		     .iteration = page_fault2_iteration);
