// SPDX-License-Identifier: GPL-2.0
/*
 * The reproducer of the 2024 pcp_batch_scale_max thread: map N GiB
 * (default 6) of anonymous memory, fill every byte with 0xff, unmap; the
 * tasks run it in parallel. An op is one page faulted and filled. The
 * thread ran 10 loops, unpinned, on a 64-vCPU guest (linux-mm msg395237):
 * so does a spec that names no tasks or placement.
 */
#include <pcplab/workload.h>

DEFINE_WORKLOAD(mmap_fill,
		.description = "mmap N GiB, fill every byte with 0xff, munmap",
		.default_size_mib = 6144, .default_tasks = 10, .unpinned = true,
		.ops = WORKLOAD_OPS_PAGES,
		.engines = WORKLOAD_MODEL | WORKLOAD_HOST);
