// SPDX-License-Identifier: GPL-2.0
/*
 * What clear_page() costs the kernel's anonymous fault on this host.
 *
 * The fault clears a mapped page: the direct map (1 GiB and 2 MiB pages on
 * x86-64) maps every page, with no fault and one large-page TLB entry; it
 * uses rep stosb where the CPU has ERMS (clear_page_erms), rep stosq where
 * it has not; and between two clears it runs the rest of the fault, a
 * couple of microseconds of code, so the 64 dirty lines of one clear drain
 * to memory while the next fault runs instead of stalling the next clear.
 * The page is cold: page_fault1 reuses a page after its task has written
 * twice its mapping at most, in a spread from 0 (a pcp list is last in,
 * first out), measured with /proc/self/pagemap (docs/fidelity.md).
 *
 * The kernel figure (clear_page_ns) is that: rep stos on a prefaulted
 * large-page buffer of @bytes (twice the LLC: cold), each page timed
 * alone after GAP_NS of spinning on the clock. The other variants drop
 * one condition each, to say what each costs; `faulting` touches pages
 * the kernel has not yet mapped (its fault and its own clear come with
 * them), `streaming_*` clear back to back (what a page costs when the
 * core waits for the DRAM's bandwidth: the sim charges that on the node's
 * channels, dram.c, not as the clear's core time).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <pcplab/hostinfo.h>

#include "clearpage.h"

#define PAGE 4096UL
#define HUGE (2UL << 20)
#define ROUNDS 5
/* the rest of a fault between two clears: page_fault1 is ~2 us a page here */
#define GAP_NS 2000
/* a page that took longer lost its CPU (4 KiB at 1 GB/s is 4 us) */
#define PREEMPTED_NS 20000
#define CHUNK 16 /* pages timed together when back to back */
#define HOT_BYTES (1UL << 20) /* a page the L2 still holds */

enum clear_insn { CLEAR_STOSB, CLEAR_STOSQ, CLEAR_MEMSET };
static const char *const insn_names[] = { "rep stosb", "rep stosq", "memset" };

static enum clear_insn kernel_insn(void)
{
#if defined(__x86_64__)
	unsigned int a, b, c, d;

	/* CPUID.(EAX=7,ECX=0):EBX bit 9: Enhanced REP MOVSB/STOSB */
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1U << 9)))
		return CLEAR_STOSB;
	return CLEAR_STOSQ;
#else
	return CLEAR_MEMSET; /* arm64's clear_page is DC ZVA, as memset's */
#endif
}

static void clear_one(char *page, enum clear_insn insn)
{
#if defined(__x86_64__)
	unsigned long n = insn == CLEAR_STOSB ? PAGE : PAGE / 8;

	if (insn == CLEAR_STOSB)
		__asm__ volatile("rep stosb"
				 : "+D"(page), "+c"(n)
				 : "a"(0)
				 : "memory");
	else if (insn == CLEAR_STOSQ)
		__asm__ volatile("rep stosq"
				 : "+D"(page), "+c"(n)
				 : "a"(0UL)
				 : "memory");
	else
#endif
		memset(page, 0, PAGE);
	__asm__ volatile("" : : "r"(page) : "memory");
}

/* A buffer of @bytes on 2 MiB boundaries, large pages or 4 KiB ones. */
static char *map_buffer(size_t bytes, bool huge, bool populate)
{
	char *buf = mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED)
		return NULL;
	buf = (char *)(((unsigned long)buf + HUGE - 1) & ~(HUGE - 1));
	madvise(buf, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	if (populate)
		memset(buf, 1, bytes);
	return buf;
}

static void unmap_buffer(char *buf, size_t bytes)
{
	munmap((void *)((unsigned long)buf & ~(HUGE - 1)), bytes + HUGE);
}

/* The least time of reading the clock twice: what a timed clear adds. */
static double clock_overhead_ns(void)
{
	double best = 1e9;

	for (int i = 0; i < 100000; i++) {
		u64 t = clock_monotonic_ns();
		double d = (double)(clock_monotonic_ns() - t);

		best = d < best ? d : best;
	}
	return best;
}

/*
 * ns a page of clearing @bytes of @buf: each page alone after GAP_NS
 * (@spaced), else CHUNK pages back to back; the pages that lost their CPU
 * are left out.
 */
static double clear_pass(char *buf, size_t bytes, enum clear_insn insn,
			 bool spaced, double overhead)
{
	unsigned long step = spaced ? 1 : CHUNK, kept = 0;
	double sum = 0;

	for (size_t off = 0; off + step * PAGE <= bytes; off += step * PAGE) {
		u64 start;
		double ns;

		if (spaced)
			for (u64 end = clock_monotonic_ns() + GAP_NS;
			     clock_monotonic_ns() < end;)
				;
		start = clock_monotonic_ns();
		for (unsigned long i = 0; i < step; i++)
			clear_one(buf + off + i * PAGE, insn);
		ns = (double)(clock_monotonic_ns() - start) - overhead;
		if (ns < (double)step * PREEMPTED_NS) {
			sum += ns;
			kept += step;
		}
	}
	return kept ? sum / (double)kept : -1;
}

static void keep_least(double *best, double ns)
{
	if (ns > 0 && (*best <= 0 || ns < *best))
		*best = ns;
}

/* First touches: a fresh mapping each round, cleared back to back. */
static double faulting_pass(size_t bytes, enum clear_insn insn, double overhead)
{
	char *buf = map_buffer(bytes, false, false);
	double ns;

	if (!buf)
		return -1;
	ns = clear_pass(buf, bytes, insn, false, overhead);
	unmap_buffer(buf, bytes);
	return ns;
}

/*
 * Measure every variant over a buffer of @bytes, in turns, ROUNDS times:
 * a busy neighbour slows one round, not one variant. Returns 0, or -1 when
 * a buffer could not be mapped.
 */
int clear_page_variants(struct clear_variants *c, size_t bytes)
{
	enum clear_insn insn = kernel_insn();
	double overhead = clock_overhead_ns();
	char *small = map_buffer(bytes, false, true);
	char *large = map_buffer(bytes, true, true);
	char *hot = map_buffer(HOT_BYTES, false, true);

	memset(c, 0, sizeof(*c));
	if (!small || !large || !hot)
		return -1;
	for (int round = 0; round < ROUNDS; round++) {
		keep_least(&c->kernel,
			   clear_pass(large, bytes, insn, true, overhead));
		keep_least(&c->spaced_4k,
			   clear_pass(small, bytes, insn, true, overhead));
		/* the passes between two rounds evicted it: warm it again */
		clear_pass(hot, HOT_BYTES, insn, false, overhead);
		keep_least(&c->hot,
			   clear_pass(hot, HOT_BYTES, insn, true, overhead));
		keep_least(&c->streaming_memset_4k,
			   clear_pass(small, bytes, CLEAR_MEMSET, false,
				      overhead));
		keep_least(&c->streaming_stos_4k,
			   clear_pass(small, bytes, insn, false, overhead));
		keep_least(&c->streaming_stos_thp,
			   clear_pass(large, bytes, insn, false, overhead));
		keep_least(&c->faulting, faulting_pass(bytes, insn, overhead));
	}
	unmap_buffer(small, bytes);
	unmap_buffer(large, bytes);
	unmap_buffer(hot, HOT_BYTES);
	c->buffer_bytes = bytes;
	c->rounds = ROUNDS;
	c->insn = insn_names[insn];
	return 0;
}

/* The JSON members of @c (no braces): the kernel's figure, then the rest. */
void print_clear_variants(const struct clear_variants *c)
{
	printf("\"clear_page_ns\":%.1f,\"clear_page\":{\"insn\":\"%s\","
	       "\"buffer_bytes\":%zu,\"rounds\":%d,\"gap_ns\":%d,"
	       "\"variants_ns\":{\"kernel\":%.1f,\"spaced_4k\":%.1f,"
	       "\"hot\":%.1f,\"streaming_memset_4k\":%.1f,"
	       "\"streaming_stos_4k\":%.1f,\"streaming_stos_thp\":%.1f,"
	       "\"faulting\":%.1f}}",
	       c->kernel, c->insn, c->buffer_bytes, c->rounds, GAP_NS,
	       c->kernel, c->spaced_4k, c->hot, c->streaming_memset_4k,
	       c->streaming_stos_4k, c->streaming_stos_thp, c->faulting);
}
