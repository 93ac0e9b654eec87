// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault1: map 128 MiB of anonymous private memory,
 * write one byte per page, unmap. An op is one page faulted.
 */
#include <pcplab/workload.h>

static int page_fault1_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_ANON, 1);

	iteration_unmap(t);
	return err;
}

const struct workload page_fault1_workload = {
	.name = "page_fault1",
	.description = "Anonymous memory page fault",
	.default_size_mib = 128,
	.iteration = page_fault1_iteration,
};
