// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault3: like page_fault2, but the mapping of the
 * task's 128 MiB file is shared, so after the first pass the pages stay in
 * the page cache and a fault allocates almost nothing: the page cache
 * pages are mapped again. An op is one page faulted.
 */
#include <pcplab/workload.h>

DEFINE_WORKLOAD(page_fault3,
		.description = "Separate file shared mapping page fault",
		.default_size_mib = 128, .ops = WORKLOAD_OPS_PAGES,
		.engines = WORKLOAD_MODEL | WORKLOAD_HOST);
