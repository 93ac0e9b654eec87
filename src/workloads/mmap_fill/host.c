// SPDX-License-Identifier: GPL-2.0
/*
 * The 2024 reproducer on the running kernel (workload.c): an anonymous
 * mapping, every byte filled with 0xff, munmap.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <pcplab/host_workload.h>

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

DEFINE_HOST_WORKLOAD(mmap_fill, .memory_bytes = one_mapping_per_task,
		     .iteration = mmap_fill_iteration);
