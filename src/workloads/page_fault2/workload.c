// SPDX-License-Identifier: GPL-2.0
/*
 * will-it-scale page_fault2: each task creates its own 128 MiB file and
 * unlinks it; each iteration maps it private, writes one byte per page
 * and unmaps. After the first pass the page cache is populated and every
 * fault is a copy-on-write: a new anonymous page and a copy of the page
 * cache page. An op is one page faulted.
 */
#include <pcplab/workload.h>

DEFINE_WORKLOAD(page_fault2,
		.description = "Separate file private mapping page fault",
		.default_size_mib = 128, .ops = WORKLOAD_OPS_PAGES,
		.engines = WORKLOAD_MODEL | WORKLOAD_HOST);
