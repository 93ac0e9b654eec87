/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The native platform: real threads, each pinned and owning one model CPU;
 * zone->lock and lru_lock are MCS queued spinlocks (Concurrency Kit), the
 * pcp lock a test-and-set lock; time is the invariant TSC; cost() is free
 * because the work itself takes real time; pages are real 4 KiB frames.
 */
#ifndef PCPLAB_ARCH_PLATFORM_H
#define PCPLAB_ARCH_PLATFORM_H

/* GCC builtins instead of inline asm, so that TSan sees the atomics. */
#define CK_USE_CC_BUILTINS 1
#include <ck_spinlock.h>
#include <x86intrin.h>

#define PCPLAB_PLATFORM "native"
#define MCS_NEST_MAX 4

typedef struct {
	ck_spinlock_mcs_t tail; /* the MCS queue; NULL when free */
	struct ck_spinlock_mcs *owner; /* the holder's queue node */
	u64 acquired_ns; /* when the holder got it */
	int cls; /* enum lock_class */
} ____cacheline_aligned spinlock_t;

typedef struct {
	int locked;
} pcp_lock_t;

extern __thread int current_cpu;
extern __thread struct cpu_stats *current_stats;
extern u64 tsc_mult; /* ns per TSC cycle, << 32 */
extern bool tsc_usable;

void spin_lock_init(spinlock_t *lock, enum lock_class cls);
void spin_lock(spinlock_t *lock);
void spin_unlock(spinlock_t *lock);
void clear_page(struct page *page);
void write_page(struct page *page, size_t bytes);
u64 now_ns_slow(void);
void arch_set_cpu(int cpu);

/* Whether another CPU is queued behind the holder of @lock. */
static inline bool spin_is_contended(spinlock_t *lock)
{
	return ck_pr_load_ptr(&lock->tail) != lock->owner;
}

static inline void pcp_lock_init(pcp_lock_t *lock)
{
	lock->locked = 0;
}

static inline bool pcp_spin_trylock(pcp_lock_t *lock)
{
	return !__atomic_load_n(&lock->locked, __ATOMIC_RELAXED) &&
	       !__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE);
}

static inline void pcp_spin_lock(pcp_lock_t *lock)
{
	while (!pcp_spin_trylock(lock))
		__builtin_ia32_pause();
}

static inline void pcp_spin_unlock(pcp_lock_t *lock)
{
	__atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

static inline bool need_resched(void)
{
	return false;
}

static inline int smp_processor_id(void)
{
	return current_cpu;
}

static inline struct cpu_stats *this_cpu_stats(void)
{
	return current_stats;
}

/* Nanoseconds from the invariant TSC (clock_gettime where it is not). */
static inline u64 now_ns(void)
{
	if (likely(tsc_usable))
		return (u64)(((unsigned __int128)__rdtsc() * tsc_mult) >> 32);
	return now_ns_slow();
}

/* Real work takes real time here: nothing to charge. */
static inline void cost(enum cost_kind kind, unsigned long n)
{
}

#endif
