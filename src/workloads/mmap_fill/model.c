// SPDX-License-Identifier: GPL-2.0
/*
 * The 2024 reproducer on the model: anonymous faults filling every byte
 * of every page, then munmap (workload.c).
 */
#include <pcplab/model_workload.h>

static int mmap_fill_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_ANON, PAGE_SIZE);

	iteration_unmap(t);
	return err;
}

DEFINE_MODEL_WORKLOAD(mmap_fill, .iteration = mmap_fill_iteration);
