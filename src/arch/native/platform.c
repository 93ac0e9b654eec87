// SPDX-License-Identifier: GPL-2.0
/*
 * The native platform's out-of-line half: TSC calibration, the queued
 * zone/LRU spinlocks with wait and hold-time accounting, and the real
 * page frames behind the model's struct pages.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <pcplab/mm.h>
#include "native.h"

__thread int current_cpu;
/* Threads that are no model CPU (the engine's main thread) count here. */
static struct cpu_stats housekeeping_stats;
__thread struct cpu_stats *current_stats = &housekeeping_stats;
u64 tsc_mult;
bool tsc_usable;

static __thread struct ck_spinlock_mcs mcs_nodes[MCS_NEST_MAX];
static __thread int mcs_depth;
static char *frames;
static size_t frames_len;

/* Make the calling thread model CPU @cpu, with that CPU's statistics. */
void arch_set_cpu(int cpu)
{
	current_cpu = cpu;
	current_stats = cpu_stats_of(cpu);
}

/* CLOCK_MONOTONIC in nanoseconds. */
u64 now_ns_slow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

static bool cpu_has_invariant_tsc(void)
{
	char line[4096];
	bool constant = false, nonstop = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

/*
 * Use the TSC for now_ns() when it is invariant: a read costs a few
 * nanoseconds, against ~20 for clock_gettime, and the engine reads the
 * clock around every fault and lock hold. Calibrated over 20 ms.
 */
void native_platform_init(void)
{
	struct timespec pause = {0, 20 * 1000 * 1000};
	u64 t0, t1, c0, c1;

	if (tsc_usable || !cpu_has_invariant_tsc())
		return;
	t0 = now_ns_slow();
	c0 = __rdtsc();
	nanosleep(&pause, NULL);
	t1 = now_ns_slow();
	c1 = __rdtsc();
	if (c1 <= c0)
		return;
	tsc_mult = (u64)(((unsigned __int128)(t1 - t0) << 32) / (c1 - c0));
	tsc_usable = true;
}

/* An unlocked queued spinlock of class @cls. */
void spin_lock_init(spinlock_t *lock, enum lock_class cls)
{
	ck_spinlock_mcs_init(&lock->tail);
	lock->owner = NULL;
	lock->acquired_ns = 0;
	lock->cls = cls;
}

/*
 * Take @lock (spin_lock_irqsave in the kernel). Time spent queued is the
 * lock's contention, as LKP counts cycles in the queued-spinlock slowpath.
 */
void spin_lock(spinlock_t *lock)
{
	struct lock_stat *st = &this_cpu_stats()->lock[lock->cls];
	struct ck_spinlock_mcs *node;

	BUG_ON(mcs_depth >= MCS_NEST_MAX);
	node = &mcs_nodes[mcs_depth++];
	if (!ck_spinlock_mcs_trylock(&lock->tail, node)) {
		u64 start = now_ns();

		ck_spinlock_mcs_lock(&lock->tail, node);
		st->wait_ns += now_ns() - start;
		st->contended++;
	}
	lock->owner = node;
	lock->acquired_ns = now_ns();
	st->acquisitions++;
}

/* Release @lock, recording how long it was held. */
void spin_unlock(spinlock_t *lock)
{
	struct ck_spinlock_mcs *node = lock->owner;

	hist_record(&this_cpu_stats()->lock[lock->cls].hold_ns,
		    now_ns() - lock->acquired_ns);
	lock->owner = NULL;
	mcs_depth--;
	ck_spinlock_mcs_unlock(&lock->tail, node);
}

/*
 * Reserve address space for @nr_pfns real frames. MAP_NORESERVE: only the
 * frames a run touches become resident.
 */
int native_frames_map(unsigned long nr_pfns)
{
	frames_len = nr_pfns * PAGE_SIZE;
	frames = mmap(NULL, frames_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (frames == MAP_FAILED) {
		frames = NULL;
		return -1;
	}
	return 0;
}

/* Give the frames back to the kernel. */
void native_frames_unmap(void)
{
	if (frames)
		munmap(frames, frames_len);
	frames = NULL;
}

static inline void *page_address(const struct page *page)
{
	return frames + page->pfn * PAGE_SIZE;
}

/* Zero the page's real frame, as the kernel's clear_page(). */
void clear_page(struct page *page)
{
	if (frames)
		memset(page_address(page), 0, PAGE_SIZE);
}

/* The workload's own writes to a faulted page (0xff, like mmap_fill). */
void write_page(struct page *page, size_t bytes)
{
	if (frames && bytes)
		memset(page_address(page), 0xff, bytes);
}
