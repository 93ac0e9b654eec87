// SPDX-License-Identifier: GPL-2.0
/*
 * stress-ng --vm: each worker maps its share of --vm-bytes (size_mib is
 * per worker), touches every page (the first write faults it in), runs
 * one method pass over the buffer and unmaps. An op is a stress-ng bogo
 * op: 4096 method steps (VM_BOGO_SHIFT 12).
 */
#include <pcplab/workload.h>

DEFINE_WORKLOAD(
	stress_vm,
	.description =
		"stress-ng vm: write64 and zero-one passes over a private mapping",
	.default_size_mib = 256, .ops = WORKLOAD_OPS_BOGO,
	.engines = WORKLOAD_MODEL | WORKLOAD_HOST);
