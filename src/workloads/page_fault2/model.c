// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault2 on the model: private faults on the task's
 * file, one byte per page, copy-on-write once the page cache holds it
 * (workload.c).
 */
#include <pcplab/model_workload.h>

static int page_fault2_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_FILE_PRIVATE, 1);

	iteration_unmap(t);
	return err;
}

DEFINE_MODEL_WORKLOAD(page_fault2, .iteration = page_fault2_iteration);
