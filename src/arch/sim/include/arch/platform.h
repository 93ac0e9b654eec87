/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sim platform: every model CPU is a coroutine with its own virtual
 * clock (picoseconds). cost() advances the running CPU's clock; shared
 * state (zone->lock, lru_lock) is touched only by the CPU with the
 * smallest clock, so the run is a conservative discrete-event simulation
 * and causality holds. Locks are FIFO queues like the kernel's queued
 * spinlock: waiters spin, and the spinning time is the contention.
 */
#ifndef PCPLAB_ARCH_PLATFORM_H
#define PCPLAB_ARCH_PLATFORM_H

#define PCPLAB_PLATFORM "sim"

struct vcpu;

/* A virtual CPU (see sched.c): the fields the inline helpers need first. */
struct vcpu_hot {
	u64 clock; /* virtual time, picoseconds */
	int id;
	u32 fgraph_depth; /* traced functions function_graph-children is in */
	struct cpu_stats *stats;
	u64 *prof; /* stats->prof_ps: ps spent per enum prof_term */
	const u64 *cost; /* ps per unit, per cost_kind */
	u64 jitter_rng; /* xorshift state for the work jitter */
	u64 fault_fixed, fault_var; /* fault work: fixed + var * Exp(1) */
	const struct page *hot_page; /* the page it last wrote whole (dram.c) */
};

/* Exp(1) at 256 evenly spaced quantiles, times 2^16 (sched.c). */
extern const u32 exp_quantiles[256];

extern struct vcpu_hot *current_vcpu;

typedef struct {
	struct vcpu *owner; /* NULL when free */
	struct vcpu *head, *tail; /* FIFO of waiters */
	int nr_waiters;
	int last_cpu; /* where its cache lines are */
	u64 acquired; /* when the owner got it (ps) */
	u64 released; /* when the last holder let it go (ps) */
	int cls; /* enum lock_class */
} spinlock_t;

/*
 * pcp->lock: only its own CPU takes it on the fast paths, so it is a flag;
 * a failed trylock means the CPU already holds it (nested).
 */
typedef struct {
	int locked;
} pcp_lock_t;

void spin_lock_init(spinlock_t *lock, enum lock_class cls);
void spin_lock_caller(spinlock_t *lock, const struct lock_caller *caller);
/* spin_lock(): charged to the taking function, as perf lock contention. */
#define spin_lock(lock) spin_lock_caller(lock, LOCK_CALLER())
void spin_unlock(spinlock_t *lock);
bool spin_is_contended(spinlock_t *lock);
void arch_init(void);
void arch_set_cpu(int cpu);
void stats_detach(void);

static inline void pcp_lock_init(pcp_lock_t *lock, int cpu)
{
	lock->locked = 0;
}

static inline bool pcp_spin_trylock(pcp_lock_t *lock)
{
	if (lock->locked)
		return false;
	lock->locked = 1;
	return true;
}

static inline void pcp_spin_lock(pcp_lock_t *lock)
{
	BUG_ON(lock->locked); /* one thread of control: it would never end */
	lock->locked = 1;
}

static inline void pcp_spin_unlock(pcp_lock_t *lock)
{
	lock->locked = 0;
}

static inline bool need_resched(void)
{
	return false;
}

static inline int smp_processor_id(void)
{
	return current_vcpu->id;
}

static inline struct cpu_stats *this_cpu_stats(void)
{
	return current_vcpu->stats;
}

/* The running CPU's virtual time in nanoseconds. */
static inline u64 now_ns(void)
{
	return current_vcpu->clock / 1000;
}

/*
 * Charge @n units of @kind to the running CPU's clock. A fault's own work
 * varies (cache misses, interrupts, the sibling thread): part of it is
 * drawn from an exponential distribution, so that queues form at locks as
 * they do on real machines and not with the regularity of a clockwork.
 */
static inline void cost(enum cost_kind kind, unsigned long n)
{
	struct vcpu_hot *v = current_vcpu;
	u64 ps;

	if (kind == COST_FAULT_BASE && v->fault_var) {
		u64 x = v->jitter_rng;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v->jitter_rng = x;
		ps = v->fault_fixed +
		     ((v->fault_var * exp_quantiles[x >> 56]) >> 16);
	} else {
		ps = v->cost[kind] * n;
	}
	v->clock += ps;
	v->prof[kind] += ps;
}

/*
 * The instrument (src/arch/sim/instrument.c): the functions it traces (a
 * bit per enum traced_func; 0 without one), and whether it also traces
 * the calls nested under them (function_graph-children). Read once per refill or
 * drain, and per out-of-line call under zone->lock, so the run without an
 * instrument pays one predicted branch at each.
 */
extern u32 sim_traced_funcs;
extern bool sim_traces_nested;
void sim_trace_entry(enum traced_func fn);
void sim_trace_return(enum traced_func fn);
void sim_trace_nested(void);

/* The entry of @fn: its probe's or tracer's hook, before its timestamp. */
static inline void trace_func_entry(enum traced_func fn)
{
	if (unlikely(sim_traced_funcs & (1U << fn)))
		sim_trace_entry(fn);
}

/* The return of @fn: its hook, after its timestamp. */
static inline void trace_func_return(enum traced_func fn)
{
	if (unlikely(sim_traced_funcs & (1U << fn)))
		sim_trace_return(fn);
}

/* An out-of-line call under a traced function: function_graph-children's. */
static inline void trace_nested_call(void)
{
	if (unlikely(sim_traces_nested) && current_vcpu->fgraph_depth)
		sim_trace_nested();
}

/* When the first scheduled pcp_batch_scale_max change is due (ps; ~0: none) */
extern u64 sim_scale_max_from;
int sim_scale_max_scheduled(void);

/*
 * pcp_batch_scale_max at the running CPU's own clock. A run's schedule of
 * changes is known before it starts (sched.c), so from the first change on
 * a CPU takes the value the schedule gives for its clock, at each use
 * site: a read at virtual time c sees every change at or before c and
 * none after, which is what the sysctl written at that time gives a CPU
 * that reads it later. Exact without sim_sync(): nothing in the run writes
 * the knob, so no other CPU's progress can change what a read returns,
 * and runs stay deterministic. Before the first change, or without a
 * schedule, the knob as set (@sysctl): one compare on the fast paths.
 */
static inline int arch_pcp_batch_scale_max(int sysctl)
{
	if (unlikely(current_vcpu->clock >= sim_scale_max_from))
		return sim_scale_max_scheduled();
	return sysctl;
}
#define arch_pcp_batch_scale_max arch_pcp_batch_scale_max

/* How long the running CPU has held @lock. */
static inline u64 spin_hold_ns(const spinlock_t *lock)
{
	return (current_vcpu->clock - lock->acquired) / 1000;
}

/* Spend @ns of virtual time (workloads with their own timing). */
static inline void delay_ns(u64 ns)
{
	current_vcpu->clock += ns * 1000;
	current_vcpu->prof[PROF_DELAY] += ns * 1000;
}

void dram_write_page(const struct page *page, u64 core_ps, int reads, int term);

/*
 * A simulated frame has no bytes: clearing it costs the core's time and a
 * page of the node's DRAM bandwidth (dram.c).
 */
static inline void clear_page(struct page *page)
{
	dram_write_page(page, current_vcpu->cost[COST_CLEAR_PAGE], 0,
			COST_CLEAR_PAGE);
}

/*
 * The same clear, in post_alloc_hook() for a __GFP_ZERO allocation: the
 * cost is clear_page()'s, the profile finds it under the allocator.
 */
static inline void kernel_init_pages(struct page *page)
{
	dram_write_page(page, current_vcpu->cost[COST_CLEAR_PAGE], 0,
			PROF_INIT_ON_ALLOC);
}

/* A COW copy reads one frame and writes another. */
static inline void copy_page(struct page *to, const struct page *from)
{
	dram_write_page(to, current_vcpu->cost[COST_COPY_PAGE], 1,
			COST_COPY_PAGE);
}

void write_page(struct page *page, size_t bytes);

#endif
