// SPDX-License-Identifier: GPL-2.0
/*
 * stress-ng --vm on the model (workload.c): fault every page in, then one
 * write64-like method pass (write then verify every word) and munmap. The
 * model counts pages, not method steps: write64 takes one step per 512
 * bytes, so one bogo op (4096 steps) is 512 pages.
 */
#include <pcplab/model_workload.h>

#define STRESS_VM_PAGES_PER_BOGO_OP 512

static int stress_vm_iteration(struct task *t)
{
	unsigned long nr = iteration_pages(t);
	int err = fault_in(t, nr, FAULT_ANON, PAGE_SIZE);

	/* the method pass: write and verify again every faulted page */
	for (unsigned long i = 0; i < t->mm.nr && !err; i++) {
		write_page(t->mm.pages[i], PAGE_SIZE);
		write_page(t->mm.pages[i], PAGE_SIZE);
	}
	iteration_unmap(t);
	return err;
}

DEFINE_MODEL_WORKLOAD(stress_vm, .iteration = stress_vm_iteration,
		      .pages_per_op = STRESS_VM_PAGES_PER_BOGO_OP);
