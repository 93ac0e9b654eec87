// SPDX-License-Identifier: GPL-2.0
/*
 * A mass exit: every task maps its memory and writes one byte per page,
 * then all of them unmap at the same tick (the next multiple of a period
 * of the clock every task reads), as the tasks of a job killed at once
 * zap their whole address spaces together: the frees that follow meet on
 * zone->lock. An op is one page faulted.
 */
#include <pcplab/workload.h>

DEFINE_WORKLOAD(
	mass_exit,
	.description = "Map and fill, then every task unmaps at one tick",
	.default_size_mib = 256, .ops = WORKLOAD_OPS_PAGES,
	.engines = WORKLOAD_MODEL | WORKLOAD_HOST);
