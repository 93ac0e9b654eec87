// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault1 on the model: anonymous faults of one byte
 * per page, then munmap (workload.c).
 */
#include <pcplab/model_workload.h>

static int page_fault1_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_ANON, 1);

	iteration_unmap(t);
	return err;
}

DEFINE_MODEL_WORKLOAD(page_fault1, .iteration = page_fault1_iteration);
