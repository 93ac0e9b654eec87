// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault1: map 128 MiB of anonymous private memory,
 * write one byte per page, unmap. An op is one page faulted.
 */
#include <pcplab/workload.h>

DEFINE_WORKLOAD(page_fault1, .description = "Anonymous memory page fault",
		.default_size_mib = 128, .ops = WORKLOAD_OPS_PAGES,
		.engines = WORKLOAD_MODEL | WORKLOAD_HOST);
