// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault3 on the model: shared faults on the task's
 * file, one byte per page (workload.c). Its pages stay in the page cache,
 * so there is nothing to hand to another CPU to free.
 */
#include <pcplab/model_workload.h>

static int page_fault3_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_FILE_SHARED, 1);

	iteration_unmap(t);
	return err;
}

DEFINE_MODEL_WORKLOAD(page_fault3, .iteration = page_fault3_iteration,
		      .no_cross_free = true);
