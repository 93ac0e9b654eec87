// SPDX-License-Identifier: GPL-2.0
/*
 * The reproducer of the 2024 pcp_batch_scale_max thread: map N GiB
 * (default 6) of anonymous memory, fill every byte with 0xff, unmap; the
 * tasks run it in parallel. An op is one page faulted and filled.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "workload.h"

static int mmap_fill_iteration(struct host_task *t)
{
	char *c = mmap(NULL, t->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t done;

	if (c == MAP_FAILED)
		return -errno;
	/* Page by page: the timed first byte faults the page in, the rest
	 * of the page is then filled as the script's write does. */
	for (done = 0; done < t->size && !host_stopping(t);
	     done += t->page_size) {
		touch_pages(t, c + done, t->page_size, (char)0xff);
		memset(c + done + 1, 0xff, t->page_size - 1);
	}
	munmap(c, t->size);
	return 0;
}

const struct host_workload host_mmap_fill = {
	.name = "mmap_fill",
	.description = "mmap N GiB, fill every byte with 0xff, munmap",
	.default_size_mib = 6144,
	.ops_are_pages = true,
	.memory_bytes = one_mapping_per_task,
	.iteration = mmap_fill_iteration,
};
