// SPDX-License-Identifier: GPL-2.0
/*
 * stress-ng --vm: each worker maps its share of --vm-bytes, touches every
 * page (the first write faults it in), runs one method pass over the
 * buffer (write64-like: write then verify every word) and unmaps. A bogo
 * op is 4096 method steps; write64 takes one step per 512 bytes, so one
 * bogo op is 512 pages (VM_BOGO_SHIFT 12). size_mib is per worker.
 */
#include <pcplab/workload.h>

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

const struct workload stress_vm_workload = {
	.name = "stress_vm",
	.description = "stress-ng vm: mmap, write and verify patterns, munmap",
	.default_size_mib = 256,
	.iteration = stress_vm_iteration,
	.pages_per_op = STRESS_VM_PAGES_PER_BOGO_OP,
};
