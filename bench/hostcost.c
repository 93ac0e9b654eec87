// SPDX-License-Identifier: GPL-2.0
/*
 * What this host's hardware charges for the operations the simulator
 * costs: clearing a 4 KiB page as the kernel's fault does (below), copying
 * one (over a buffer larger than the caches, as faults see it), a fault
 * that maps the zero page (the trap's cost, bounded above), moving a
 * cache line between two CPUs (ping-pong of one line; half a round trip),
 * the latency of a load that hits the LLC and of one that goes to DRAM (a
 * dependent chase through lines in random order, as lmbench's lat_mem_rd
 * does), and the store bandwidth of every CPU clearing pages at once, and
 * the clock under load: one CPU running a chain of dependent adds (one a
 * cycle on every core since the P6 and on Arm's big cores) gives the turbo
 * with one core busy, every CPU at once the all-core turbo. Prints one JSON
 * object; `pcplab calibrate` turns it into a machine profile.
 *
 *	bench-hostcost [CPU_A CPU_B [LLC_BYTES]]
 *	bench-hostcost clear [BUFFER_BYTES]	(the clear variants alone)
 *	bench-hostcost zero SECONDS		(zero-page faults only, for perf)
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

#include "clearpage.h"

#define BUFFER (256UL << 20)
#define PAGE 4096UL
#define PINGS 2000000UL

/* Copying a page: half of a buffer larger than the caches into the other. */
static double copy_page_ns(void)
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

			memcpy(dst, dst + BUFFER / 2, PAGE);
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
	munmap(buf, BUFFER);
	return (double)(clock_monotonic_ns() - start) / (4.0 * pages);
}

struct pingpong {
	volatile unsigned long line __attribute__((aligned(64)));
	int cpu[2];
};

/*
 * ns of a fault that does next to nothing in handle_mm_fault: a read of an
 * untouched anonymous page maps the shared zero page (no allocation,
 * clear, charge or LRU add). What remains is the exception's entry and
 * return, the VMA lookup and one pte: an upper bound of the trap's cost,
 * which a perf profile of the page fault splits out as exc_page_fault.
 * The best of 5 rounds of 16384 faults (munmap outside the timing); or
 * as many rounds as SECONDS take, for `perf record` to split the trap
 * from the rest of the loop (pcplab calibrate).
 */
static double zero_fault_rounds(int rounds, double seconds)
{
	unsigned long pages = 16384;
	double best = -1;
	u64 end = clock_monotonic_ns() + (u64)(seconds * 1e9);

	for (int round = 0; round < rounds || clock_monotonic_ns() < end;
	     round++) {
		volatile char *buf = mmap(NULL, pages * PAGE, PROT_READ,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		u64 start, ns;

		if (buf == MAP_FAILED)
			return -1;
		start = clock_monotonic_ns();
		for (unsigned long i = 0; i < pages; i++)
			(void)buf[i * PAGE];
		ns = clock_monotonic_ns() - start;
		munmap((void *)buf, pages * PAGE);
		if (best < 0 || (double)ns / pages < best)
			best = (double)ns / pages;
	}
	return best;
}

static double zero_fault_ns(void)
{
	return zero_fault_rounds(5, 0);
}

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

/* A pinned thread that works until @until and counts what it did. */
struct worker {
	pthread_t thread;
	int cpu;
	double done; /* bytes stored, or adds (cycles) run */
	u64 until;
};

static void *store_pages(void *arg)
{
	struct worker *s = arg;
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
		s->done += (double)size;
	}
	munmap(buf, size);
	return NULL;
}

/* GB/s that every CPU clearing pages at once stores to memory. */
static double store_gbs(void)
{
	int n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct worker *s = calloc((size_t)n, sizeof(*s));
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
		bytes += s[i].done;
	}
	free(s);
	return bytes / (double)(clock_monotonic_ns() - start);
}

/*
 * Dependent adds of one thread until @until: each waits for the last.
 * Register to register: a chain of adds of an immediate is folded by
 * some cores' renamers (this host's Xeon guest ran about four a ns, and
 * calibrate read a 2.1 GHz part as 4.4 to 7.5 GHz); bench/listcheck.c
 * times its cycles the same way.
 */
static void *add_chain(void *arg)
{
	struct worker *s = arg;
	unsigned long x = 1, rounds = 0;

	pin(s->cpu);
	while (clock_monotonic_ns() < s->until) {
		for (int i = 0; i < 1000; i++) {
#if defined(__x86_64__) || defined(__i386__)
			__asm__ volatile("add %0, %0\n\tadd %0, %0\n\t"
					 "add %0, %0\n\tadd %0, %0"
					 : "+r"(x));
#elif defined(__aarch64__)
			__asm__ volatile("add %0, %0, %0\n\tadd %0, %0, %0\n\t"
					 "add %0, %0, %0\n\tadd %0, %0, %0"
					 : "+r"(x));
#endif
		}
		rounds++;
	}
	s->done = (double)rounds * 4000;
	return NULL;
}

/*
 * The clock in GHz of @n CPUs busy at once (the slowest of them), or -1
 * where the adds are not written for this architecture. The first 100 ms
 * let the CPUs reach their turbo before counting.
 */
static double clock_ghz(int n)
{
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
	struct worker *s = calloc((size_t)n, sizeof(*s));
	double slowest = 0;

	if (!s)
		return -1;
	for (int i = 0; i < n; i++) {
		s[i].cpu = i;
		s[i].until = clock_monotonic_ns() + 100000000ULL;
		pthread_create(&s[i].thread, NULL, add_chain, &s[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(s[i].thread, NULL);
	for (int i = 0; i < n; i++) {
		u64 start = clock_monotonic_ns();

		s[i].until = start + 300000000ULL;
		s[i].done = 0;
		pthread_create(&s[i].thread, NULL, add_chain, &s[i]);
	}
	for (int i = 0; i < n; i++) {
		double ghz;

		pthread_join(s[i].thread, NULL);
		ghz = s[i].done / 300e6;
		slowest = i && slowest < ghz ? slowest : ghz;
	}
	free(s);
	return slowest;
#else
	(void)n;
	return -1;
#endif
}

int main(int argc, char **argv)
{
	int a = argc > 2 ? atoi(argv[1]) : 0, b = argc > 2 ? atoi(argv[2]) : 1;
	size_t llc = argc > 3 ? strtoul(argv[3], NULL, 0) : 8UL << 20;
	struct clear_variants clear;
	char model[256];

	if (argc > 1 && !strcmp(argv[1], "clear")) {
		size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 0) : BUFFER;

		if (clear_page_variants(&clear, bytes))
			return 1;
		printf("{");
		print_clear_variants(&clear);
		printf("}\n");
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "zero")) {
		printf("{\"zero_fault_ns\":%.1f}\n",
		       zero_fault_rounds(1, strtod(argv[2], NULL)));
		return 0;
	}
	/* cold: twice the LLC, so a page comes back after the LLC let it go */
	if (clear_page_variants(&clear, 2 * llc > BUFFER ? 2 * llc : BUFFER))
		return 1;
	cpu_model_name(model, sizeof(model));
	printf("{\"cpu_model\":\"%s\",", model);
	print_clear_variants(&clear);
	printf(",\"copy_page_ns\":%.1f,\"zero_fault_ns\":%.1f,"
	       "\"line_xfer_ns\":%.1f,\"cpus\":[%d,%d],"
	       "\"llc_ns\":%.1f,\"dram_ns\":%.1f,\"store_gbs\":%.2f,"
	       "\"turbo_ghz\":%.2f,\"all_core_ghz\":%.2f}\n",
	       copy_page_ns(), zero_fault_ns(), line_xfer_ns(a, b), a, b,
	       load_ns(llc / 2), load_ns(512UL << 20), store_gbs(),
	       clock_ghz(1), clock_ghz((int)sysconf(_SC_NPROCESSORS_ONLN)));
	return 0;
}
