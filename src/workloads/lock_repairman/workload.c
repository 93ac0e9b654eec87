// SPDX-License-Identifier: GPL-2.0
/*
 * The machine-repairman check of the simulator itself: every task thinks
 * for an exponential time (mean think_ns), takes one shared lock, holds it
 * for an exponential time (mean hold_ns) and lets go. The lock is then a
 * closed finite-source M/M/1//N queue whose utilisation and mean wait have
 * closed forms. An op is one acquisition. It checks the model's locks, so
 * it has no host half: the kernel's locks are not the model's.
 */
#include <pcplab/workload.h>

DEFINE_WORKLOAD(
	lock_repairman,
	.description = "exponential think, one shared lock, exponential hold",
	.default_size_mib = 1, .ops = WORKLOAD_OPS_LOCKS,
	.engines = WORKLOAD_MODEL);
