/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every structure of the allocator model, documented in one place (after
 * include/linux/mmzone.h and include/linux/mm_types.h). Field names are the
 * kernel's, so that a patch to mm/page_alloc.c can be ported by hand.
 */
#ifndef PCPLAB_MMZONE_H
#define PCPLAB_MMZONE_H

#include <string.h>

#include "list.h"
#include "platform.h"
#include "histogram.h"
#include "registry.h"

#define MAX_PAGE_ORDER 10
#define NR_PAGE_ORDERS (MAX_PAGE_ORDER + 1)
#define PAGE_ALLOC_COSTLY_ORDER 3
#define HPAGE_PMD_ORDER 9
#define pageblock_order 9
#define pageblock_nr_pages (1UL << pageblock_order)
#define MAX_NUMNODES 64
#define MAX_NR_ZONES 4
#define NR_CPUS 1024

enum migratetype {
	MIGRATE_UNMOVABLE,
	MIGRATE_MOVABLE,
	MIGRATE_RECLAIMABLE,
	MIGRATE_PCPTYPES, /* the number of types on the pcp lists */
	MIGRATE_HIGHATOMIC = MIGRATE_PCPTYPES,
	MIGRATE_TYPES
};

/* PCP lists: one per (migratetype, order) for orders 0..3, two for THP. */
#define NR_LOWORDER_PCP_LISTS (MIGRATE_PCPTYPES * (PAGE_ALLOC_COSTLY_ORDER + 1))
#define NR_PCP_THP 2
#define NR_PCP_LISTS (NR_LOWORDER_PCP_LISTS + NR_PCP_THP)
#define PCP_RECENT 1024 /* slots of per_cpu_pages.recent, a power of two */

/*
 * Where a page is. The kernel keeps only PageBuddy; the model also marks
 * PCP and held pages so that the invariant checker can prove that every
 * page is in exactly one place.
 */
enum page_state {
	PAGE_TAIL, /* inside a free buddy block, not its head */
	PAGE_BUDDY, /* head of a free block on free_area[order] */
	PAGE_PCP, /* on a per-CPU list */
	PAGE_HELD, /* handed out: owned by a task (mapped, on the LRU) */
};

/*
 * struct page: one per 4 KiB frame, in a virtually contiguous memory map
 * (memmap.c) that gets memory a section at a time, so that a 1 TiB machine
 * costs only what its workload touches. 16 bytes (the kernel's is 64):
 * the map is what a simulation of hundreds of CPUs mostly waits for.
 */
struct page {
	struct list_head lru; /* buddy free list or PCP list (32-bit links) */
	u8 state; /* enum page_state */
	u8 order; /* buddy order (PAGE_BUDDY) or block order */
	u8 alloc_mt; /* migratetype it was allocated as */
	u8 on_lru; /* PG_lru */
	u32 pcp_seq; /* model only: its slot in its pageset's recent[] ring */
};

struct free_area {
	struct list_head free_list[MIGRATE_TYPES];
	unsigned long nr_free;
};

/* pcp->flags */
#define PCPF_PREV_FREE_HIGH_ORDER (1 << 0)
#define PCPF_FREE_HIGH_BATCH (1 << 1)

/*
 * The per-CPU pageset of one zone (struct per_cpu_pages). count is in base
 * pages over all orders. free_count is a short in the kernel; the model
 * widens it to int so that --batch up to 32767 << 6 cannot overflow.
 */
struct per_cpu_pages {
	pcp_lock_t lock; /* protects everything below */
	int count; /* pages on the lists */
	int high; /* drain threshold, auto-tuned in [min, max] */
	int high_min;
	int high_max;
	int batch; /* refill/drain chunk */
	u8 flags; /* PCPF_* */
	u8 alloc_factor; /* refill scaling: batch << alloc_factor */
	u8 free_factor; /* v5.14..v6.6 free scaling (kernel field) */
	u8 expire; /* remote-node drain countdown (unused) */
	int free_count; /* consecutive freed pages, scales drains */
	int policy_count; /* a policy's own counter (policies/) */
	struct list_head lists[NR_PCP_LISTS];
	/*
	 * Order-0 pages other CPUs freed to this one (pcp-buddy: frees go to
	 * a page's owner), until it absorbs them into its lists. Not in
	 * count; remote_lock protects them.
	 */
	spinlock_t remote_lock;
	struct list_head remote;
	int nr_remote;
	/*
	 * Model only, for the simulator's speed: the pfns of the pages freed
	 * to the lists, in the order they were freed (a ring of PCP_RECENT
	 * slots, recent_seq the next; each page keeps its slot in pcp_seq).
	 * A drain takes pages from the tail, in that order, so the ring names
	 * the pages it will reach before their list links can. A stale slot
	 * only wastes a prefetch.
	 */
	u32 *recent;
	u32 recent_seq;
} ____cacheline_aligned;

enum zone_watermarks { WMARK_MIN, WMARK_LOW, WMARK_HIGH, NR_WMARK };

/* zone->flags bits */
enum zone_flags {
	ZONE_BOOSTED_WATERMARK,
	ZONE_RECLAIM_ACTIVE,
	ZONE_BELOW_HIGH,
};

enum zone_type { ZONE_DMA, ZONE_DMA32, ZONE_NORMAL, ZONE_MOVABLE };

struct pglist_data;

struct zone {
	spinlock_t lock; /* free_area, nr_free, pageblock types */
	struct free_area free_area[NR_PAGE_ORDERS];
	unsigned long flags; /* enum zone_flags bits */
	unsigned long _watermark[NR_WMARK];
	unsigned long watermark_boost;
	unsigned long zone_start_pfn;
	unsigned long spanned_pages;
	unsigned long managed_pages;
	long nr_free_pages; /* NR_FREE_PAGES: buddy + deferred pages */
	/*
	 * Deferred struct page init (DEFERRED_STRUCT_PAGE_INIT, and
	 * deferred_grow_zone()): pfns from deferred_pfn to the zone end are
	 * free but not yet on the free lists; they are handed to the buddy
	 * a section at a time when the lists run dry.
	 */
	unsigned long deferred_pfn;
	int pageset_high_min; /* values last written to the pcps */
	int pageset_high_max;
	int pageset_batch;
	struct per_cpu_pages *per_cpu_pageset; /* [nr_cpu_ids] */
	u32 *pcp_recent; /* model only: their recent[] rings, one allocation */
	u8 *pageblock_flags; /* migratetype per pageblock */
	s16 *pageblock_owner; /* pcp-buddy: the owning CPU per pageblock, -1 */
	struct pglist_data *zone_pgdat;
	enum zone_type type;
	int node; /* zone_pgdat->node_id, one load nearer (CONFIG_NUMA) */
	const char *name;
} ____cacheline_aligned;

/*
 * The LRU of a node (memcg-less): lru_lock is the second contended lock of
 * page_fault1, taken through per-CPU batches (lru_add, release_pages).
 */
struct lruvec {
	spinlock_t lru_lock;
	unsigned long nr_pages; /* a count: nothing scans it (no reclaim) */
};

struct pglist_data {
	struct zone node_zones[MAX_NR_ZONES];
	int nr_zones;
	int node_id;
	int nr_cpus; /* CPUs of this node */
	struct lruvec lruvec;
	/* node_zonelists[ZONELIST_FALLBACK]: NULL-terminated */
	struct zone *zonelist[MAX_NUMNODES * MAX_NR_ZONES + 1];
};

/*
 * Per-CPU counters and histograms (vmstat-like). Each CPU writes only its
 * own; results merge them after the run. The items every page or batch
 * counts come first: with cpu_stats.ops they fill its first cache line.
 */
enum pcp_stat_item {
	PGALLOC, /* pages handed out, either path */
	PGFREE, /* pages freed, either path */
	PCP_REFILLS, /* rmqueue_bulk calls */
	PCP_PAGES_REFILLED,
	PCP_DRAINS, /* free_pcppages_bulk calls */
	PCP_PAGES_DRAINED,
	NUMA_HIT, /* allocations served by the CPU's own node */
	PCP_TRYLOCK_FAIL, /* pcp trylock failures (fell back to buddy) */
	PCP_BUDDY_FALLBACK, /* single pages taken/freed under zone->lock */
	ZONE_LOCK_RELINQUISH, /* zone->lock drops inside a free batch */
	ALLOC_FAIL, /* allocations that found no page */
	NUMA_MISS, /* ... by another node (the local one was short) */
	/* an instrument's own work (src/arch/sim/instrument.c) */
	INSTR_PROBE_HITS, /* hooks at a traced function's entry or return */
	INSTR_NESTED_CALLS, /* function_graph-children's calls under them */
	INSTR_SAMPLES, /* perf-profile samples that cost time */
	INSTR_SAMPLES_SPUN, /* ... that fell while spinning (their cost hid) */
	INSTR_CHARGED_PS, /* time the instrument cost, picoseconds */
	INSTR_LOCKED_PS, /* ... of it with zone->lock held */
	NR_PCP_STAT_ITEMS
};

/*
 * Functions that take locks (struct lock_caller), with room to spare: the
 * model's spin_lock() sites name 14. lock_callers_init() refuses to start
 * if they name more than this.
 */
#define NR_LOCK_CALLERS 32

/*
 * One caller's acquisitions of one lock class on one CPU, and its waits as
 * `perf lock contention` shows them: half a cache line, all an
 * acquisition writes. The class's totals are the sums over its callers.
 */
struct lock_caller_stat {
	u64 acquisitions;
	u64 contended; /* acquisitions that had to wait */
	u64 wait_ns; /* time spent spinning */
	u64 max_wait_ns;
	u64 pull_ps; /* sim: holds' start, pulling the last holder's lines */
};

struct lock_stat {
	struct lock_caller_stat callers[NR_LOCK_CALLERS]; /* by caller id */
	/*
	 * The order callers first waited in (1, 2, ...; 0: never): results
	 * list callers with equal waits in the order they were first seen.
	 */
	u8 first_wait[NR_LOCK_CALLERS];
	int nr_waited; /* callers that have waited */
	struct hist hold_ns; /* hold times */
} ____cacheline_aligned;

/* Count an acquisition of a lock of @st's class by @caller. */
static inline void lock_stat_acquired(struct lock_stat *st,
				      const struct lock_caller *caller)
{
	st->callers[caller->id].acquisitions++;
}

/* Account a wait of @wait_ns for a lock of @st's class that @caller took. */
static inline void lock_stat_waited(struct lock_stat *st,
				    const struct lock_caller *caller,
				    u64 wait_ns)
{
	struct lock_caller_stat *c = &st->callers[caller->id];

	if (unlikely(!c->contended))
		st->first_wait[caller->id] = (u8)++st->nr_waited;
	c->contended++;
	c->wait_ns += wait_ns;
	if (wait_ns > c->max_wait_ns)
		c->max_wait_ns = wait_ns;
}

/*
 * @st's class over all its callers: acquisitions, contended, wait_ns (the
 * largest wait is per caller only). Inlined, a caller that reads one field
 * sums only that one.
 */
static inline struct lock_caller_stat
lock_stat_totals(const struct lock_stat *st)
{
	struct lock_caller_stat sum = { 0 };

	for (int id = 0; id < NR_LOCK_CALLERS; id++) {
		sum.acquisitions += st->callers[id].acquisitions;
		sum.contended += st->callers[id].contended;
		sum.wait_ns += st->callers[id].wait_ns;
	}
	return sum;
}

enum latency_item {
	LAT_RMQUEUE_BULK,
	LAT_FREE_PCPPAGES_BULK,
	LAT_FAULT,
	LAT_RMQUEUE_BULK_HOLD, /* zone->lock held by rmqueue_bulk */
	LAT_FREE_PCPPAGES_BULK_HOLD, /* ... by free_pcppages_bulk, per hold */
	NR_LATENCY_ITEMS
};

/*
 * A CPU's statistics. A simulated CPU runs a few pages at a time between
 * switches, each time with its lines cold: what a fault counts (ops,
 * PGALLOC, NUMA_HIT) shares the first line, and the histograms start on
 * lines of their own.
 */
struct cpu_stats {
	u64 ops; /* workload operations */
	u64 events[NR_PCP_STAT_ITEMS];
	u64 prof_ps[NR_PROF_TERMS]; /* sim: time per enum prof_term */
	u64 window_from_ns; /* when these statistics started (0: not yet) */
	u64 window_ns; /* how long they covered, once closed */
	struct lock_stat lock[NR_LOCK_CLASSES];
	struct hist latency[NR_LATENCY_ITEMS] ____cacheline_aligned;
} ____cacheline_aligned;

/* Start @st afresh at @now_ns: measuring starts on this CPU. */
static inline void stats_window_start(struct cpu_stats *st, u64 now_ns)
{
	memset(st, 0, sizeof(*st));
	st->window_from_ns = now_ns ? now_ns : 1;
}

/* Close @st's window at @now_ns (before its CPU's statistics go nowhere). */
static inline void stats_window_end(struct cpu_stats *st, u64 now_ns)
{
	if (st->window_from_ns && !st->window_ns)
		st->window_ns = now_ns - st->window_from_ns;
}

/*
 * The zone-lock relinquish policy while freeing: Joshua Hahn's linux-mm
 * threads of 2025, v1 "mm/page_alloc: Occasionally relinquish zone lock in
 * batch freeing" (not merged) and "mm/page_alloc: Batch callers of
 * free_pcppages_bulk" (v6.19). In the order of the spec key's choices
 * (relinquish in spec_keys.h): the spec stores the index.
 */
enum relinquish {
	RELINQUISH_OFF, /* one hold per free_pcppages_bulk */
	RELINQUISH_CONTENDED, /* 2025 v1: drop every batch when contended */
	RELINQUISH_BATCHED, /* 6.19: callers free in pcp->batch chunks */
};

/*
 * A kernel generation: which PCP behaviour is in force. See generations.c
 * for the table and the commits behind each flag.
 */
struct kernel_gen {
	const char *name;
	/*
	 * v5.16+: the fault path works on folios, takes per-VMA locks (v6.4)
	 * and pays the 5.x mitigations. Only the simulator's costs read it
	 * (the fault's, and the buddy's cycles per page under zone->lock):
	 * the model's allocator behaviour does not depend on it.
	 */
	bool folio_fault;
	bool pcp_high_order; /* orders 1..3 and THP on pcp lists (v5.13) */
	bool high_from_zone; /* high from zone_highsize() (v5.14) */
	bool free_factor; /* v5.14..v6.6 free_factor drain scaling */
	bool high_autotune; /* v6.7: high_min/max, alloc_factor, decay */
	bool free_high_v616; /* v6.16: free_high needs batch + high_min/2 */
	bool drain_chunked; /* v6.10: drain_pages_zone in batch<<S chunks */
	bool pcp_trylock; /* v6.0: pcp spinlock + trylock */
	unsigned long batch_cap_bytes; /* zone_batchsize cap */
	int lru_batch; /* pagevec / folio_batch size */
	/* v6.9: release_pages() through folios_put_refs() (99fbb6bfc16f) */
	bool folios_put_release;
	int lru_release_batch; /* pages per lru_lock hold in release_pages */
	int release_gather; /* pages freed at once after their LRU work */
	enum relinquish relinquish; /* default policy */
};

/*
 * A PCP policy: the few decisions the linux-mm threads argue about, each a
 * hook a policy file (src/mm/policies/<name>.c) may fill. A NULL hook keeps
 * the kernel generation's own rule, so the "default" policy fills none and
 * is each generation exactly. The code paths keep their kernel names; a
 * hook is called where the kernel makes that decision.
 */
struct pcp_policy_ops {
	const char *name;
	const char *summary; /* one line for `pcplab policies` */
	/* Blocks of @order a refill takes (the kernel's nr_pcp_alloc()). */
	int (*nr_alloc)(struct per_cpu_pages *pcp, struct zone *zone,
			unsigned int order);
	/* The drain threshold of a free (nr_pcp_high()). */
	int (*nr_high)(struct per_cpu_pages *pcp, struct zone *zone, int batch,
		       bool free_high);
	/* Pages a drain frees once count reached @high (nr_pcp_free()). */
	int (*nr_free)(struct per_cpu_pages *pcp, int batch, int high,
		       bool free_high);
	/*
	 * A refill or drain of @pcp took zone->lock; @waited: it was found
	 * held (the lock's contended count grew).
	 */
	void (*zone_locked)(struct per_cpu_pages *pcp, struct zone *zone,
			    bool waited);
	/*
	 * Refill @list of @pcp for an allocation of @order (the kernel's
	 * rmqueue_bulk() of nr_pcp_alloc() blocks); returns the blocks added.
	 */
	int (*refill)(struct zone *zone, unsigned int order, int migratetype,
		      unsigned int alloc_flags, struct per_cpu_pages *pcp,
		      struct list_head *list);
	/*
	 * Free @page of @order somewhere other than this CPU's pageset (to
	 * its owner); false: free it here as the generation does.
	 */
	bool (*free_remote)(struct zone *zone, struct page *page,
			    unsigned int order);
	/* No time-based decay of pcp->high by the vmstat worker. */
	bool no_time_decay;
	/*
	 * __free_one_page() leaves an order-0 page on the order-0 list without
	 * looking for its buddy: no buddy struct page is read under zone->lock.
	 */
	bool skip_merge_order0;
	/* Moves pcp->high: needs a generation with high_min..high_max (v6.7). */
	bool needs_high_autotune;
};

/* The generation's own rules: every hook NULL (policies/default.c). */
extern const struct pcp_policy_ops default_pcp_policy;

/* Define policy @id (its name is @name) and register it. */
#define DEFINE_PCP_POLICY(id, ...)                                      \
	const struct pcp_policy_ops id##_pcp_policy = { __VA_ARGS__ };  \
	static const struct pcp_policy_ops *const id##_pcp_policy_entry \
	__registry_entry(pcplab_pcp_policies) = &id##_pcp_policy

/* The policy called @name, or NULL. */
const struct pcp_policy_ops *find_pcp_policy(const char *name);
/* "a, b, c": every policy's name, sorted. */
const char *pcp_policy_names(void);

/*
 * The policy a run is configured with. pcp_batch_scale_max is the runtime
 * knob of the 2024 proposal (the kernel's CONFIG_PCP_BATCH_SCALE_MAX):
 * every use site reads it, so it can change while a run is going.
 */
struct pcp_policy {
	struct kernel_gen gen; /* a copy: one load less on fast paths */
	const struct pcp_policy_ops *ops; /* the decisions (policies/) */
	int batch; /* override, 0 = zone_batchsize() */
	int high; /* override, -1 = computed */
	int high_fraction; /* vm.percpu_pagelist_high_fraction */
	bool no_free_scaling; /* 2023 debug kernel: drain exactly batch */
	bool no_alloc_scaling; /* before c0a242394cb9: refill exactly batch */
	enum relinquish relinquish;
	int pcp_batch_scale_max;
	int stat_interval_ms; /* vm.stat_interval: decay period */
	unsigned long min_free_kbytes; /* 0 = sqrt(16 * lowmem_kbytes) */
};

extern struct pcp_policy pcp_policy;

/* What freeing a block of @order to the buddy costs under zone->lock. */
static inline enum cost_kind buddy_free_cost(unsigned int order)
{
	return !order && pcp_policy.ops->skip_merge_order0
		       ? COST_BUDDY_FREE_UNMERGED
		       : COST_BUDDY_FREE_PAGE;
}

extern struct pglist_data *node_data[MAX_NUMNODES];
extern int nr_node_ids;
extern int nr_cpu_ids;
extern int cpu_to_node_map[NR_CPUS];
extern struct cpu_stats *cpu_stats; /* [2 * nr_cpu_ids]: CPUs, then sinks */

#define NODE_DATA(nid) (node_data[nid])
#define for_each_cpu(cpu) for ((cpu) = 0; (cpu) < nr_cpu_ids; (cpu)++)
#define for_each_populated_zone_of(pgdat, zone)                          \
	for ((zone) = (pgdat)->node_zones;                               \
	     (zone) < (pgdat)->node_zones + (pgdat)->nr_zones; (zone)++) \
		if ((zone)->managed_pages)

static inline int cpu_to_node(int cpu)
{
	return cpu_to_node_map[cpu];
}

static inline int zone_to_nid(const struct zone *zone)
{
	return zone->node;
}

static inline struct per_cpu_pages *per_cpu_ptr(struct zone *zone, int cpu)
{
	return &zone->per_cpu_pageset[cpu];
}

/*
 * The knob as the running CPU reads it now. A platform whose CPUs each
 * keep their own clock (sim) defines arch_pcp_batch_scale_max() to give
 * the value a scheduled change has set by that clock.
 */
static inline int pcp_batch_scale_max(void)
{
	int value = READ_ONCE(pcp_policy.pcp_batch_scale_max);

#ifdef arch_pcp_batch_scale_max
	value = arch_pcp_batch_scale_max(value);
#endif
	return value;
}

static inline unsigned long wmark_pages(const struct zone *z, int w)
{
	return z->_watermark[w] + z->watermark_boost;
}
#define min_wmark_pages(z) wmark_pages(z, WMARK_MIN)
#define low_wmark_pages(z) wmark_pages(z, WMARK_LOW)
#define high_wmark_pages(z) wmark_pages(z, WMARK_HIGH)

static inline bool test_bit(int nr, const unsigned long *addr)
{
	return (__atomic_load_n(addr, __ATOMIC_RELAXED) >> nr) & 1;
}

static inline void set_bit(int nr, unsigned long *addr)
{
	__atomic_fetch_or(addr, 1UL << nr, __ATOMIC_RELAXED);
}

static inline void clear_bit(int nr, unsigned long *addr)
{
	__atomic_fetch_and(addr, ~(1UL << nr), __ATOMIC_RELAXED);
}

static inline struct cpu_stats *cpu_stats_of(int cpu)
{
	return &cpu_stats[cpu];
}

/* Where @cpu's statistics go once it is past the measured window. */
static inline struct cpu_stats *cpu_stats_sink(int cpu)
{
	return &cpu_stats[nr_cpu_ids + cpu];
}

static inline void count_event(enum pcp_stat_item item, u64 n)
{
	this_cpu_stats()->events[item] += n;
}

#endif
