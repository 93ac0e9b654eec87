// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault3: a shared mapping of the task's own 128 MiB
 * file, one byte written per page, unmapped. After the first pass no
 * fault allocates: the page cache pages are mapped again. An op is one
 * page faulted.
 */
#include <pcplab/workload.h>

static int page_fault3_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_FILE_SHARED, 1);

	iteration_unmap(t);
	return err;
}

const struct workload page_fault3_workload = {
	.name = "page_fault3",
	.description = "Separate file shared mapping page fault",
	.default_size_mib = 128,
	.iteration = page_fault3_iteration,
	.no_cross_free = true,
};
