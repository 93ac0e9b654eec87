/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The native platform: real threads, each pinned and owning one model CPU;
 * zone->lock and lru_lock are MCS queued spinlocks (Concurrency Kit), the
 * pcp lock an asymmetric owner lock; time is the invariant TSC; cost() is free
 * because the work itself takes real time; pages are real 4 KiB frames.
 */
#ifndef PCPLAB_ARCH_PLATFORM_H
#define PCPLAB_ARCH_PLATFORM_H

#include <pthread.h>
#include <x86intrin.h>
#ifndef __SANITIZE_THREAD__
#include <ck_spinlock.h>
#endif

#define PCPLAB_PLATFORM "native"
#define MCS_NEST_MAX 4

extern __thread int current_cpu;

/*
 * zone->lock and lru_lock: an MCS queued lock (Concurrency Kit), FIFO like
 * the kernel's qspinlock. ThreadSanitizer cannot see Concurrency Kit's
 * atomics, so sanitizer builds use a pthread spinlock (which it
 * understands). With more tasks than CPUs (native_lock_yields) a waiter
 * spins on the free lock word and yields its CPU after a while instead of
 * queueing: a kernel spinlock holder cannot be preempted, a thread can, and
 * a FIFO queue behind a preempted thread stops every CPU (lock-holder and
 * lock-waiter preemption). @waiters counts the spinners either way.
 */
typedef struct {
#ifndef __SANITIZE_THREAD__
	ck_spinlock_mcs_t tail; /* the MCS queue; NULL when free */
	struct ck_spinlock_mcs *owner; /* the holder's queue node */
#else
	pthread_spinlock_t plain;
#endif
	int waiters; /* threads spinning for the lock */
	u64 acquired_ns; /* when the holder got it */
	int cls; /* enum lock_class */
} ____cacheline_aligned spinlock_t;

extern __thread struct cpu_stats *current_stats;
extern u64 tsc_mult; /* ns per TSC cycle, << 32 */
extern bool tsc_usable;
extern bool native_lock_yields; /* more tasks than CPUs: see spinlock_t */

void spin_lock_init(spinlock_t *lock, enum lock_class cls);
void spin_lock_caller(spinlock_t *lock, const struct lock_caller *caller);
/* spin_lock(): charged to the taking function, as perf lock contention. */
#define spin_lock(lock) spin_lock_caller(lock, LOCK_CALLER())
void spin_unlock(spinlock_t *lock);
void clear_page(struct page *page);
void copy_page(struct page *to, const struct page *from);
/* A __GFP_ZERO allocation's clear: the same memset here. */
static inline void kernel_init_pages(struct page *page)
{
	clear_page(page);
}
void write_page(struct page *page, size_t bytes);
u64 now_ns_slow(void);
void arch_set_cpu(int cpu);
void arch_init(void);
void stats_detach(void);

bool spin_is_contended(spinlock_t *lock);

/*
 * pcp->lock. The kernel pays an atomic for pcp_spin_trylock(); its
 * per-CPU data is otherwise nearly free (preempt_disable). Here each
 * pageset belongs to one thread, so the lock is asymmetric: the owning CPU
 * takes it with a store and a load, and a remote locker (a drain from
 * another CPU) pays a membarrier() that orders both sides (Dekker with an
 * asymmetric fence). Under ThreadSanitizer, which cannot see membarrier(),
 * and where membarrier() is missing, every locker uses an atomic exchange.
 */
typedef struct {
	int fast_cpu; /* the owner CPU, or -2 where the lock is symmetric */
	int local; /* the owner is inside */
	int remote; /* a remote locker is inside or entering */
	int remote_lock; /* serialises remote lockers (and the fallback) */
} pcp_lock_t;

extern bool pcp_lock_asymmetric;
void pcp_spin_lock_slow(pcp_lock_t *lock);
bool pcp_spin_trylock_slow(pcp_lock_t *lock);
void pcp_spin_unlock_slow(pcp_lock_t *lock);

static inline void pcp_lock_init(pcp_lock_t *lock, int cpu)
{
	lock->fast_cpu = pcp_lock_asymmetric ? cpu : -2;
	lock->local = lock->remote = lock->remote_lock = 0;
}

/* Try to lock a pageset; its own CPU's fast path is a store and a load. */
static inline bool pcp_spin_trylock(pcp_lock_t *lock)
{
	if (unlikely(lock->fast_cpu != current_cpu))
		return pcp_spin_trylock_slow(lock);
	if (__atomic_load_n(&lock->local, __ATOMIC_RELAXED))
		return false; /* held by this CPU already: a nested attempt */
	__atomic_store_n(&lock->local, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (likely(!__atomic_load_n(&lock->remote, __ATOMIC_ACQUIRE)))
		return true;
	__atomic_store_n(&lock->local, 0, __ATOMIC_RELEASE);
	return false;
}

static inline void pcp_spin_unlock(pcp_lock_t *lock)
{
	if (likely(lock->fast_cpu == current_cpu))
		__atomic_store_n(&lock->local, 0, __ATOMIC_RELEASE);
	else
		pcp_spin_unlock_slow(lock);
}

/* Lock any CPU's pageset, waiting for it (remote drains, decay). */
static inline void pcp_spin_lock(pcp_lock_t *lock)
{
	if (lock->fast_cpu != current_cpu) {
		pcp_spin_lock_slow(lock);
		return;
	}
	while (!pcp_spin_trylock(lock))
		__builtin_ia32_pause();
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

/* How long the caller has held @lock. */
static inline u64 spin_hold_ns(const spinlock_t *lock)
{
	return now_ns() - lock->acquired_ns;
}

/* Spin for @ns of real time. */
static inline void delay_ns(u64 ns)
{
	u64 end = now_ns() + ns;

	while (now_ns() < end)
		__builtin_ia32_pause();
}

/* Real work takes real time here: nothing to charge. */
static inline void cost(enum cost_kind kind, unsigned long n)
{
}

/* Real threads are traced by nothing: no instrument to charge. */
static inline void trace_func_entry(enum traced_func fn)
{
}

static inline void trace_func_return(enum traced_func fn)
{
}

static inline void trace_nested_call(void)
{
}

#endif
