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
#include <sched.h>
#include <time.h>

#include <pcplab/hostinfo.h>
#include <pcplab/engine.h>
#include <pcplab/mm.h>
#include "native.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Threads that are no model CPU (the engine's main thread) are CPU -1. */
__thread int current_cpu = -1;
bool pcp_lock_asymmetric;
/* ... and count their statistics here. */
static struct cpu_stats housekeeping_stats;
__thread struct cpu_stats *current_stats = &housekeeping_stats;
u64 tsc_mult;
bool tsc_usable;

static char *frames;
static size_t frames_len;

/* The statistics of a thread past its measured window go nowhere. */
void stats_detach(void)
{
	if (current_cpu >= 0)
		current_stats = cpu_stats_sink(current_cpu);
}

/* Make the calling thread model CPU @cpu, with that CPU's statistics. */
void arch_set_cpu(int cpu)
{
	current_cpu = cpu;
	current_stats = cpu_stats_of(cpu);
}

/* CLOCK_MONOTONIC in nanoseconds (where the TSC is not invariant). */
u64 now_ns_slow(void)
{
	return clock_monotonic_ns();
}

/*
 * Set the platform up: the asymmetric pcp lock where membarrier() is
 * there, and the TSC for now_ns() when it is invariant: clock_gettime()
 * reads it too, then converts, and the engine reads the clock around every
 * fault and lock hold. Calibrated against CLOCK_MONOTONIC over 20 ms.
 */
void arch_init(void)
{
#ifndef __SANITIZE_THREAD__
	if (!pcp_lock_asymmetric &&
	    !syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		     0, 0))
		pcp_lock_asymmetric = true;
#endif
	if (!tsc_usable)
		tsc_usable = tsc_calibrate(20, &tsc_mult, NULL);
}

static bool xchg_trylock(int *word)
{
	return !__atomic_load_n(word, __ATOMIC_RELAXED) &&
	       !__atomic_exchange_n(word, 1, __ATOMIC_ACQUIRE);
}

/*
 * A pageset locked from elsewhere than its owner CPU, or any pageset where
 * the lock is symmetric. Asymmetric: announce the remote locker, make
 * every thread execute a full barrier (so the owner either sees the
 * announcement or has made its own store visible), then check the owner.
 */
bool pcp_spin_trylock_slow(pcp_lock_t *lock)
{
	if (!xchg_trylock(&lock->remote_lock))
		return false;
	if (lock->fast_cpu == -2)
		return true;
	__atomic_store_n(&lock->remote, 1, __ATOMIC_RELAXED);
	syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	if (!__atomic_load_n(&lock->local, __ATOMIC_ACQUIRE))
		return true;
	pcp_spin_unlock_slow(lock);
	return false;
}

/* Wait for a pageset from elsewhere than its owner CPU. */
void pcp_spin_lock_slow(pcp_lock_t *lock)
{
	while (!xchg_trylock(&lock->remote_lock))
		__builtin_ia32_pause();
	if (lock->fast_cpu == -2)
		return;
	__atomic_store_n(&lock->remote, 1, __ATOMIC_RELAXED);
	syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	while (__atomic_load_n(&lock->local, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

/* Unlock a pageset locked by pcp_spin_(try)lock_slow(). */
void pcp_spin_unlock_slow(pcp_lock_t *lock)
{
	if (lock->fast_cpu != -2)
		__atomic_store_n(&lock->remote, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&lock->remote_lock, 0, __ATOMIC_RELEASE);
}

bool native_lock_yields;

/* Spins on a busy lock word between two sched_yield()s when oversubscribed. */
#define YIELD_AFTER_SPINS 1024

#ifndef __SANITIZE_THREAD__
static __thread struct ck_spinlock_mcs mcs_nodes[MCS_NEST_MAX];
static __thread int mcs_depth;

static void qlock_init(spinlock_t *lock)
{
	ck_spinlock_mcs_init(&lock->tail);
	lock->owner = NULL;
	lock->waiters = 0;
}

/*
 * The oversubscribed wait: take the lock word with the MCS trylock (an
 * uncontended MCS acquisition), spinning on it while it is held and
 * yielding the CPU every YIELD_AFTER_SPINS spins so that a preempted
 * holder runs. Not FIFO; see spinlock_t.
 */
static void qlock_lock_yielding(spinlock_t *lock, struct ck_spinlock_mcs *node)
{
	while (!ck_spinlock_mcs_trylock(&lock->tail, node)) {
		for (int spins = 0; ck_pr_load_ptr(&lock->tail); spins++) {
			if (spins == YIELD_AFTER_SPINS) {
				sched_yield();
				spins = 0;
			}
			ck_pr_stall();
		}
	}
}

/* Take the lock; false if it had to wait. */
static bool qlock_lock(spinlock_t *lock, u64 *waited)
{
	struct ck_spinlock_mcs *node;
	u64 start;

	BUG_ON(mcs_depth >= MCS_NEST_MAX);
	node = &mcs_nodes[mcs_depth++];
	if (ck_spinlock_mcs_trylock(&lock->tail, node)) {
		lock->owner = node;
		return true;
	}
	start = now_ns();
	if (native_lock_yields) {
		__atomic_fetch_add(&lock->waiters, 1, __ATOMIC_RELAXED);
		qlock_lock_yielding(lock, node);
		__atomic_fetch_sub(&lock->waiters, 1, __ATOMIC_RELAXED);
	} else {
		ck_spinlock_mcs_lock(&lock->tail, node);
	}
	*waited = now_ns() - start;
	lock->owner = node;
	return false;
}

static void qlock_unlock(spinlock_t *lock)
{
	struct ck_spinlock_mcs *node = lock->owner;

	lock->owner = NULL;
	mcs_depth--;
	ck_spinlock_mcs_unlock(&lock->tail, node);
}

/* Whether another CPU is queued behind, or spins for, the holder of @lock. */
bool spin_is_contended(spinlock_t *lock)
{
	return ck_pr_load_ptr(&lock->tail) != lock->owner ||
	       __atomic_load_n(&lock->waiters, __ATOMIC_RELAXED) > 0;
}
#else
static void qlock_init(spinlock_t *lock)
{
	pthread_spin_init(&lock->plain, PTHREAD_PROCESS_PRIVATE);
	lock->waiters = 0;
}

static bool qlock_lock(spinlock_t *lock, u64 *waited)
{
	u64 start;

	if (!pthread_spin_trylock(&lock->plain))
		return true;
	start = now_ns();
	__atomic_fetch_add(&lock->waiters, 1, __ATOMIC_RELAXED);
	pthread_spin_lock(&lock->plain);
	__atomic_fetch_sub(&lock->waiters, 1, __ATOMIC_RELAXED);
	*waited = now_ns() - start;
	return false;
}

static void qlock_unlock(spinlock_t *lock)
{
	pthread_spin_unlock(&lock->plain);
}

bool spin_is_contended(spinlock_t *lock)
{
	return __atomic_load_n(&lock->waiters, __ATOMIC_RELAXED) > 0;
}
#endif

/* An unlocked queued spinlock of class @cls. */
void spin_lock_init(spinlock_t *lock, enum lock_class cls)
{
	qlock_init(lock);
	lock->acquired_ns = 0;
	lock->cls = cls;
}

/*
 * Take @lock (spin_lock_irqsave in the kernel) for @caller. Time spent
 * queued is the lock's contention, as LKP counts cycles in the
 * queued-spinlock slowpath, and @caller's, as perf lock contention shows.
 */
void spin_lock_caller(spinlock_t *lock, const struct lock_caller *caller)
{
	struct lock_stat *st = &this_cpu_stats()->lock[lock->cls];
	u64 waited = 0;

	if (!qlock_lock(lock, &waited))
		lock_stat_waited(st, caller, waited);
	lock->acquired_ns = now_ns();
	lock_stat_acquired(st, caller);
}

/* Release @lock, recording how long it was held. */
void spin_unlock(spinlock_t *lock)
{
	hist_record(&this_cpu_stats()->lock[lock->cls].hold_ns,
		    now_ns() - lock->acquired_ns);
	qlock_unlock(lock);
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
	return frames + page_to_pfn(page) * PAGE_SIZE;
}

/* Zero the page's real frame, as the kernel's clear_page(). */
void clear_page(struct page *page)
{
	if (frames)
		memset(page_address(page), 0, PAGE_SIZE);
}

/* Copy a frame, as a COW fault does. */
void copy_page(struct page *to, const struct page *from)
{
	if (frames)
		memcpy(page_address(to), page_address(from), PAGE_SIZE);
}

/* The workload's own writes to a faulted page (0xff, like mmap_fill). */
void write_page(struct page *page, size_t bytes)
{
	if (frames && bytes)
		memset(page_address(page), 0xff, bytes);
}

/*
 * The native engine runs the model in real time: an instrument's cost
 * would be the real tracer's, which this engine does not run.
 */
int arch_instrument_check(const struct instrument *in, char *err)
{
	if (in->kind == INSTRUMENT_NONE)
		return 0;
	snprintf(
		err, ERRLEN,
		"instrument %s: the native engine runs in real time and charges no instrument; give instrument none, or run it on the sim engine",
		instrument_kind_names[in->kind]);
	return -1;
}
