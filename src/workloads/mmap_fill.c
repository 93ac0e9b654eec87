// SPDX-License-Identifier: GPL-2.0
/*
 * The reproducer of the 2024 pcp_batch_scale_max thread: map N GiB
 * (default 6), fill every byte, unmap; tasks run it in parallel. An op is
 * one page faulted (and filled).
 */
#include <pcplab/workload.h>

static int mmap_fill_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_ANON, PAGE_SIZE);

	iteration_unmap(t);
	return err;
}

const struct workload mmap_fill_workload = {
	.name = "mmap_fill",
	.description = "mmap N GiB, fill every byte with 0xff, munmap",
	.default_size_mib = 6144,
	.iteration = mmap_fill_iteration,
};
