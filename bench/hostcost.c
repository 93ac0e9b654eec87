// SPDX-License-Identifier: GPL-2.0
/*
 * What this host's hardware charges for the operations the simulator
 * costs: clearing and copying a 4 KiB page (over a buffer larger than the
 * caches, as faults see it), and moving a cache line between two CPUs
 * (ping-pong of one line; half a round trip). Prints one JSON object;
 * `pcplab calibrate` turns it into a machine profile.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <pcplab/hostinfo.h>

#define BUFFER (256UL << 20)
#define PAGE 4096UL
#define PINGS 2000000UL

static double page_op_ns(bool copy)
{
	char *buf = mmap(NULL, BUFFER, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	unsigned long pages = BUFFER / PAGE / 2;
	u64 start;

	if (buf == MAP_FAILED)
		return -1;
	memset(buf, 1, BUFFER);
	start = clock_monotonic_ns();
	for (int round = 0; round < 4; round++)
		for (unsigned long i = 0; i < pages; i++) {
			char *dst = buf + i * PAGE;

			if (copy)
				memcpy(dst, dst + BUFFER / 2, PAGE);
			else
				memset(dst, 0, PAGE);
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
	munmap(buf, BUFFER);
	return (double)(clock_monotonic_ns() - start) / (4.0 * pages);
}

struct pingpong {
	volatile unsigned long line __attribute__((aligned(64)));
	int cpu[2];
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *pong(void *arg)
{
	struct pingpong *p = arg;

	pin(p->cpu[1]);
	for (unsigned long i = 1; i < 2 * PINGS; i += 2) {
		while (__atomic_load_n(&p->line, __ATOMIC_ACQUIRE) != i)
			;
		__atomic_store_n(&p->line, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* One-way cache-line transfer time between @a and @b, in ns. */
static double line_xfer_ns(int a, int b)
{
	struct pingpong p = { .line = 0, .cpu = { a, b } };
	pthread_t t;
	u64 start;

	if (pthread_create(&t, NULL, pong, &p))
		return -1;
	pin(a);
	start = clock_monotonic_ns();
	for (unsigned long i = 0; i < 2 * PINGS; i += 2) {
		__atomic_store_n(&p.line, i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&p.line, __ATOMIC_ACQUIRE) != i + 2)
			;
	}
	pthread_join(t, NULL);
	return (double)(clock_monotonic_ns() - start) / (2.0 * PINGS);
}

int main(int argc, char **argv)
{
	int a = argc > 2 ? atoi(argv[1]) : 0, b = argc > 2 ? atoi(argv[2]) : 1;
	char model[256];

	cpu_model_name(model, sizeof(model));
	printf("{\"cpu_model\":\"%s\",\"clear_page_ns\":%.1f,"
	       "\"copy_page_ns\":%.1f,\"line_xfer_ns\":%.1f,\"cpus\":[%d,%d]}\n",
	       model, page_op_ns(false), page_op_ns(true), line_xfer_ns(a, b),
	       a, b);
	return 0;
}
