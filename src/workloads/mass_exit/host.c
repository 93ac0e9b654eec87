// SPDX-License-Identifier: GPL-2.0
/*
 * The mass exit on the running kernel (workload.c): fault the mapping in,
 * sleep until the next 20 ms tick of CLOCK_MONOTONIC, which every task
 * shares, and munmap, so that all tasks zap their pages together.
 */
#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include <pcplab/host_workload.h>

#define MASS_EXIT_PERIOD_NS (20 * 1000000LL)

/* Sleep until the next multiple of the period on CLOCK_MONOTONIC. */
static void sleep_to_next_tick(void)
{
	struct timespec now, tick;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = ((long long)now.tv_sec * 1000000000LL + now.tv_nsec) /
		     MASS_EXIT_PERIOD_NS * MASS_EXIT_PERIOD_NS +
	     MASS_EXIT_PERIOD_NS;
	tick.tv_sec = ns / 1000000000LL;
	tick.tv_nsec = ns % 1000000000LL;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL) ==
	       EINTR)
		;
}

static int mass_exit_iteration(struct host_task *t)
{
	char *c = mmap(NULL, t->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return -errno;
	touch_pages(t, c, t->size, 0);
	if (!host_stopping(t))
		sleep_to_next_tick();
	munmap(c, t->size);
	return 0;
}

DEFINE_HOST_WORKLOAD(mass_exit, .memory_bytes = one_mapping_per_task,
		     .iteration = mass_exit_iteration);
