// SPDX-License-Identifier: GPL-2.0
/*
 * What this host's hardware charges for the operations the simulator
 * costs: clearing and copying a 4 KiB page (over a buffer larger than the
 * caches, as faults see it), moving a cache line between two CPUs
 * (ping-pong of one line; half a round trip), the latency of a load that
 * hits the LLC and of one that goes to DRAM (a dependent chase through
 * lines in random order, as lmbench's lat_mem_rd does), and the store
 * bandwidth of every CPU clearing pages at once. Prints one JSON object;
 * `pcplab calibrate` turns it into a machine profile.
 *
 *	bench-hostcost [CPU_A CPU_B [LLC_BYTES]]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/*
 * Average latency of a load over @bytes: every 64-byte line holds the
 * address of the next, in a random cycle, so each load waits for the last
 * and no prefetcher can guess the next.
 */
static double load_ns(size_t bytes)
{
	size_t lines = bytes / 64, steps = 4000000;
	char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	size_t *order = malloc(lines * sizeof(*order));
	u64 seed = 0x9e3779b97f4a7c15ULL, start;
	void **p;

	if (buf == MAP_FAILED || !order || lines < 2)
		return -1;
	for (size_t i = 0; i < lines; i++)
		order[i] = i;
	for (size_t i = lines - 1; i > 0; i--) { /* Fisher-Yates */
		size_t j, t;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		j = seed % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		*(void **)(buf + order[i] * 64) =
			buf + order[(i + 1) % lines] * 64;
	p = (void **)(buf + order[0] * 64);
	for (size_t i = 0; i < lines; i++) /* warm the TLB and caches */
		p = *p;
	start = clock_monotonic_ns();
	for (size_t i = 0; i < steps; i++)
		p = *p;
	__asm__ volatile("" : : "r"(p));
	start = clock_monotonic_ns() - start;
	free(order);
	munmap(buf, bytes);
	return (double)start / (double)steps;
}

struct storer {
	pthread_t thread;
	int cpu;
	double bytes;
	u64 until;
};

static void *store_pages(void *arg)
{
	struct storer *s = arg;
	size_t size = 64UL << 20;
	char *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	pin(s->cpu);
	if (buf == MAP_FAILED)
		return NULL;
	while (clock_monotonic_ns() < s->until) {
		for (size_t off = 0; off < size; off += PAGE)
			memset(buf + off, 0, PAGE);
		__asm__ volatile("" : : "r"(buf) : "memory");
		s->bytes += (double)size;
	}
	munmap(buf, size);
	return NULL;
}

/* GB/s that every CPU clearing pages at once stores to memory. */
static double store_gbs(void)
{
	int n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct storer *s = calloc((size_t)n, sizeof(*s));
	u64 start = clock_monotonic_ns();
	double bytes = 0;

	if (!s)
		return -1;
	for (int i = 0; i < n; i++) {
		s[i].cpu = i;
		s[i].until = start + 500000000ULL;
		pthread_create(&s[i].thread, NULL, store_pages, &s[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(s[i].thread, NULL);
		bytes += s[i].bytes;
	}
	free(s);
	return bytes / (double)(clock_monotonic_ns() - start);
}

int main(int argc, char **argv)
{
	int a = argc > 2 ? atoi(argv[1]) : 0, b = argc > 2 ? atoi(argv[2]) : 1;
	size_t llc = argc > 3 ? strtoul(argv[3], NULL, 0) : 8UL << 20;
	char model[256];

	cpu_model_name(model, sizeof(model));
	printf("{\"cpu_model\":\"%s\",\"clear_page_ns\":%.1f,"
	       "\"copy_page_ns\":%.1f,\"line_xfer_ns\":%.1f,\"cpus\":[%d,%d],"
	       "\"llc_ns\":%.1f,\"dram_ns\":%.1f,\"store_gbs\":%.2f}\n",
	       model, page_op_ns(false), page_op_ns(true), line_xfer_ns(a, b),
	       a, b, load_ns(llc / 2), load_ns(512UL << 20), store_gbs());
	return 0;
}
