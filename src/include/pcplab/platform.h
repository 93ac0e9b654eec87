/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The platform contract: everything the allocator model needs from the
 * world it runs in. Each platform (src/arch/<name>/) implements it in
 * <arch/platform.h>, mostly as inline code:
 *
 *   spinlock_t, spin_lock_init(), spin_lock(), spin_unlock(),
 *   spin_is_contended(), spin_hold_ns()
 *                           zone->lock and lruvec->lru_lock (queued locks;
 *                           spin_lock() is the kernel's spin_lock_irqsave)
 *   pcp_lock_t, pcp_spin_trylock(), pcp_spin_lock(), pcp_spin_unlock()
 *                           pcp->lock (trylock on the fast paths)
 *   need_resched(), cond_resched()
 *   smp_processor_id()      the CPU the current task runs on
 *   now_ns()                a cheap monotonic clock (virtual time on sim)
 *   cost(kind, n)           the time an operation takes: advances the
 *                           virtual clock on sim, nothing on native where
 *                           the work itself takes real time
 *   delay_ns(ns)            spend @ns doing nothing shared (workloads that
 *                           model think and hold times)
 *   clear_page(page)        zero a frame (native: the real 4 KiB frame)
 *   kernel_init_pages(page) zero a frame the allocator hands out for
 *                           __GFP_ZERO (post_alloc_hook(): perf finds it
 *                           under get_page_from_freelist)
 *   copy_page(to, from)     copy a frame (a COW fault)
 *   this_cpu_stats()        the current CPU's counters and histograms
 *   stats_detach()          from now on, count this CPU's statistics
 *                           nowhere (its task is past the measured window)
 *   arch_init()             set the platform up, once, before anything else
 *   arch_set_cpu(cpu)       make the calling thread model CPU @cpu (for
 *                           single-threaded drivers: the property tests)
 *   trace_func_entry(fn), trace_func_return(fn)
 *                           the entry and return of a function an
 *                           instrument may trace (<pcplab/instrument.h>):
 *                           its hooks' cost, outside its own timing
 *   trace_nested_call()     a call the kernel makes out of line under a
 *                           traced function (function_graph-children
 *                           traces it too)
 *   arch_instrument_check(in, err)
 *                           0 if the platform can charge instrument @in
 */
#ifndef PCPLAB_PLATFORM_H
#define PCPLAB_PLATFORM_H

#include "types.h"
#include "registry.h"
#include "instrument.h"

#define PAGE_SHIFT 12
#define PAGE_SIZE (1UL << PAGE_SHIFT)

/* Which lock a spinlock_t is, for contention and hold-time accounting. */
enum lock_class {
	LOCK_ZONE,
	LOCK_LRU,
	LOCK_PCP,
	LOCK_MMAP, /* mmap_lock of a process whose threads share one mm */
	LOCK_CROSS_FREE, /* the mailbox between a CPU that allocates and one that frees */
	LOCK_TEST, /* a workload's own lock (the machine-repairman check) */
	LOCK_PCP_REMOTE, /* a pageset's queue of pages other CPUs freed to it */
	NR_LOCK_CLASSES,
};

/*
 * Operations whose duration the simulator charges. The names say where in
 * the kernel the time goes; the machine profile gives each a figure.
 */
enum cost_kind {
	COST_FAULT_TRAP, /* the exception's entry, outside handle_mm_fault */
	COST_FAULT_TRAP_RETURN, /* its exit work and iret, irqs off */
	COST_FAULT_BASE, /* handle_mm_fault: page-table walk, pte install */
	COST_CLEAR_PAGE, /* clear_page() of one 4 KiB page */
	COST_COPY_PAGE, /* copy_page() for a COW fault */
	COST_PCP_ALLOC, /* rmqueue_pcplist fast path, per call */
	COST_PCP_FREE, /* free_frozen_pages to the PCP, per page */
	COST_BUDDY_ALLOC_PAGE, /* __rmqueue + expand per block, zone->lock held */
	COST_BUDDY_FREE_PAGE, /* __free_one_page per page, zone->lock held */
	COST_BUDDY_FREE_UNMERGED, /* the same, an order-0 page left unmerged */
	COST_LRU_ADD_PAGE, /* lruvec_add_folio, lru_lock held */
	COST_LRU_DEL_PAGE, /* lruvec_del_folio, lru_lock held */
	COST_UNMAP_PAGE, /* zap_pte_range and TLB flush share, per page */
	COST_MMAP, /* mmap + munmap syscall overhead, per call */
	COST_LIST_ADD_CHECK, /* __list_add_valid_or_report (CONFIG_DEBUG_LIST) */
	COST_LIST_DEL_CHECK, /* __list_del_entry_valid_or_report (ditto) */
	NR_COST_KINDS,
};

/*
 * Where a CPU's time goes, for the result's perf_profile: every cost kind,
 * and the time the simulator spends outside cost() (src/engine/perf_profile.c
 * maps each to the kernel function a perf sample would land in).
 */
enum prof_term {
	PROF_USER_WRITE =
		NR_COST_KINDS, /* the workload's own stores to a page */
	PROF_DELAY, /* delay_ns(): a workload's own timing, polling */
	PROF_INSTRUMENT, /* the instrument's own cost (src/arch/sim/instrument.c) */
	PROF_INIT_ON_ALLOC, /* kernel_init_pages(): clear_page of __GFP_ZERO */
	NR_PROF_TERMS,
};

struct page;
struct cpu_stats;

/*
 * The function that takes a lock, as `perf lock contention` names callers.
 * Every spin_lock() site has one of its own, registered in a linker
 * section; lock_callers_init() gives the sites of one function the same
 * @id before main() runs, so an acquisition indexes its caller's row
 * (lock_stat.callers) instead of searching for its name.
 */
struct lock_caller {
	const char *name; /* the site's __func__ */
	int id; /* its function's row in every lock_stat */
};

/* The lock_caller of the spin_lock() site this expands in. */
#define LOCK_CALLER()                                                \
	({                                                           \
		static struct lock_caller __lock_caller = {          \
			.name = __func__                             \
		};                                                   \
		static struct lock_caller *const __lock_caller_entry \
			__registry_entry(pcplab_lock_callers) =      \
				&__lock_caller;                      \
		&__lock_caller;                                      \
	})

/* The name of the function whose caller id is @id. */
const char *lock_caller_name(int id);

/* 0 if this platform can charge @in's cost; else -1 with one line in @err. */
int arch_instrument_check(const struct instrument *in, char *err);

#include <arch/platform.h>

#endif
