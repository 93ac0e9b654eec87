// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault2: a private mapping of the task's own 128 MiB
 * file, one byte written per page, unmapped. After the first pass the
 * page cache is populated and every fault is a COW copy into a new page.
 * An op is one page faulted.
 */
#include <pcplab/workload.h>

static int page_fault2_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_FILE_PRIVATE, 1);

	iteration_unmap(t);
	return err;
}

const struct workload page_fault2_workload = {
	.name = "page_fault2",
	.description = "Separate file private mapping page fault",
	.default_size_mib = 128,
	.iteration = page_fault2_iteration,
};
