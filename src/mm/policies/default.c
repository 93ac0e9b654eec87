// SPDX-License-Identifier: GPL-2.0
/*
 * default: each kernel generation's own rules (src/mm/page_alloc.c and
 * generations.c), unchanged. Every hook is NULL.
 */
#include <pcplab/mm.h>

DEFINE_PCP_POLICY(default, .name = "default",
		  .summary = "the kernel generation's own rules, unchanged");
