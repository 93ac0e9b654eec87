// SPDX-License-Identifier: GPL-2.0
/*
 * The result's perf_profile: the share of the measured CPU time each kernel
 * function would hold in LKP's perf-profile (perf-profile.self.cycles-pp.F
 * and perf-profile.children.cycles-pp.F), from where the model spent it.
 *
 * The sim engine knows where every picosecond of a CPU's virtual clock
 * went: each cost term (enum cost_kind, enum prof_term) charged to the
 * running CPU, the waits for a lock (its spin, lock_stat.wait_ns, the
 * numerator of `contention`) and the start of each hold, pulling the last
 * holder's lines (lock_caller_stat.pull_ps). The tables below map each of
 * them, once, to the function a cycles sample would land in; the map is
 * documented in docs/machines.md ("Where the cycles go"), and the
 * shares are of every CPU's measured window (its statistics' own), so
 * they add up to at most 100%.
 */
#include <stdlib.h>
#include <string.h>

#include <pcplab/engine.h>
#include <pcplab/mm.h>

/* Kernel builds whose functions differ: 4.18, 6.6, 6.18 and later. */
enum prof_era { ERA_4_18, ERA_6_6, ERA_6_18, NR_ERAS };

/* A function in each era; NULL: no function (left unattributed). */
struct prof_fn {
	const char *name[NR_ERAS];
};

/*
 * Self time of each term. On 6.18 the names are those of Debian's 6.18
 * build (its /proc/kallsyms): rmqueue_bulk and __rmqueue_smallest are
 * inlined into __rmqueue_pcplist, zap_pte_range into unmap_page_range.
 */
static const struct prof_fn term_fn[NR_PROF_TERMS] = {
	/*
	 * The exception's entry, up to the irq enable in do_user_addr_fault,
	 * and its work outside handle_mm_fault: x86's C handler
	 * (exc_page_fault since v5.8's idtentry; do_page_fault before).
	 */
	[COST_FAULT_TRAP] = { { "do_page_fault", "exc_page_fault",
				"exc_page_fault" } },
	/*
	 * Its return, where KPTI's CR3 switch back sits: the IRET-to-user
	 * path split out in v4.15 (26c4ef9c49d8).
	 */
	[COST_FAULT_TRAP_RETURN] = { { "swapgs_restore_regs_and_return_to_usermode",
				       "swapgs_restore_regs_and_return_to_usermode",
				       "swapgs_restore_regs_and_return_to_usermode" } },
	/* page-table walk and pte install: the fault path's own code */
	[COST_FAULT_BASE] = { { "handle_mm_fault", "handle_mm_fault",
				"handle_mm_fault" } },
	/* rep stosb (clear_page_rep on a CPU without ERMS: erms_fn below) */
	[COST_CLEAR_PAGE] = { { "clear_page_erms", "clear_page_erms",
				"clear_page_erms" } },
	[COST_COPY_PAGE] = { { "copy_page", "copy_page", "copy_page" } },
	/* the pcp list's fast path (rmqueue_pcplist is inlined into it) */
	[COST_PCP_ALLOC] = { { "__rmqueue_pcplist", "__rmqueue_pcplist",
			       "__rmqueue_pcplist" } },
	/* the free to the pcp list, per page */
	[COST_PCP_FREE] = { { "free_unref_page_commit",
			      "free_unref_page_commit",
			      "free_frozen_page_commit" } },
	/* the buddy's per-block work of a refill, under zone->lock */
	[COST_BUDDY_ALLOC_PAGE] = { { "rmqueue_bulk", "rmqueue_bulk",
				      "__rmqueue_pcplist" } },
	/* the buddy's per-page merge of a drain, under zone->lock */
	[COST_BUDDY_FREE_PAGE] = { { "free_pcppages_bulk", "free_pcppages_bulk",
				     "__free_one_page" } },
	[COST_BUDDY_FREE_UNMERGED] = { { "free_pcppages_bulk",
					 "free_pcppages_bulk",
					 "__free_one_page" } },
	/* lruvec_add_folio under lru_lock, inlined into the add function */
	[COST_LRU_ADD_PAGE] = { { "__pagevec_lru_add_fn", "lru_add_fn",
				  "lru_add" } },
	/* lruvec_del_folio under lru_lock, inlined into the release */
	[COST_LRU_DEL_PAGE] = { { "release_pages", "release_pages",
				  "__page_cache_release" } },
	[COST_UNMAP_PAGE] = { { "zap_pte_range", "zap_pte_range",
				"unmap_page_range" } },
	/* the mmap and munmap system calls' entry and VMA work */
	[COST_MMAP] = { { "do_syscall_64", "do_syscall_64", "do_syscall_64" } },
	/* CONFIG_DEBUG_LIST's checks, out of line (renamed in v6.6) */
	[COST_LIST_ADD_CHECK] = { { "__list_add_valid",
				    "__list_add_valid_or_report",
				    "__list_add_valid_or_report" } },
	[COST_LIST_DEL_CHECK] = { { "__list_del_entry_valid",
				    "__list_del_entry_valid_or_report",
				    "__list_del_entry_valid_or_report" } },
	/* a workload's own stores: user space (LKP: the testcase's symbol) */
	[PROF_USER_WRITE] = { { "user", "user", "user" } },
	/* PROF_INIT_ON_ALLOC: clear_page's, under get_page_from_freelist */
	/* PROF_DELAY, PROF_INSTRUMENT: nothing the kernel's profile names */
};

static const char *const erms_fn[2] = { "clear_page_rep", "clear_page_erms" };

/*
 * Where a lock's spin is sampled: the queued spinlock's slow path, which
 * x86's paravirt build names native_; arm64 has no paravirt spinlocks.
 */
static const char *const spin_fn[2] = { "native_queued_spin_lock_slowpath",
					"queued_spin_lock_slowpath" };

/*
 * perf-profile-cpu-clock: the cpu-clock event's hrtimer interrupt waits
 * while interrupts are off, and its sample is taken where they are enabled
 * again. On 6.6 and later the zone->lock and lru_lock holds and spins are
 * such sections (spin_lock_irqsave in rmqueue_bulk and free_pcppages_bulk,
 * folio_lruvec_lock_irqsave in folio_batch_move_lru and folios_put_refs):
 * their time is sampled in _raw_spin_unlock_irqrestore. The exception is
 * entered with interrupts off up to do_user_addr_fault's local_irq_enable
 * (exc_page_fault, as the cycles event samples it) and returns with them
 * off from the exit work to iret: its return is sampled in user space.
 */
#define IRQ_ENABLE_FN "_raw_spin_unlock_irqrestore"
#define IRQSAVE_TERMS                                               \
	(1U << COST_BUDDY_ALLOC_PAGE | 1U << COST_BUDDY_FREE_PAGE | \
	 1U << COST_BUDDY_FREE_UNMERGED | 1U << COST_LRU_ADD_PAGE | \
	 1U << COST_LRU_DEL_PAGE)

/*
 * arm64's names where x86's are its own: clear_page (DC ZVA, one routine,
 * arch/arm64/lib/clear_page.S), the system call's entry (4.18: the
 * el0_svc_naked assembly of entry.S; 4.19 on: invoke_syscall in C) and the
 * fault's exception (do_mem_abort, whose children are the whole fault).
 */
static const struct prof_fn arm64_fn[NR_PROF_TERMS] = {
	[COST_FAULT_TRAP] = { { "do_mem_abort", "do_mem_abort",
				"do_mem_abort" } },
	[COST_FAULT_TRAP_RETURN] = { { "ret_to_user", "ret_to_user",
				       "ret_to_user" } },
	[COST_CLEAR_PAGE] = { { "clear_page", "clear_page", "clear_page" } },
	[COST_MMAP] = { { "el0_svc_naked", "invoke_syscall",
			  "invoke_syscall" } },
};

/*
 * The model's lock takers: the side of the fault (alloc) or of munmap
 * (free) each works for, and the term whose function its hold's start
 * (pulling the last holder's lines) is charged to. A taker not listed
 * (the mailbox, a workload's own lock, mmap_lock) is left unattributed,
 * and so are the waits of every lock but zone->lock and lru_lock.
 */
enum prof_side { SIDE_ALLOC, SIDE_FREE };

static const struct {
	const char *caller;
	enum prof_side side;
	int term; /* enum cost_kind or prof_term */
} takers[] = {
	{ "rmqueue_bulk", SIDE_ALLOC, COST_BUDDY_ALLOC_PAGE },
	{ "rmqueue_buddy", SIDE_ALLOC, COST_BUDDY_ALLOC_PAGE },
	{ "claim_pageblock", SIDE_ALLOC, COST_BUDDY_ALLOC_PAGE },
	{ "free_pcppages_bulk", SIDE_FREE, COST_BUDDY_FREE_PAGE },
	{ "free_one_page", SIDE_FREE, COST_BUDDY_FREE_PAGE },
	{ "folio_batch_move_lru", SIDE_ALLOC, COST_LRU_ADD_PAGE },
	{ "release_pages", SIDE_FREE, COST_LRU_DEL_PAGE },
};

/*
 * Children (a function and everything it calls): the fault, the page
 * allocator, the free of munmap's pages, and what each takes in. Not
 * CONFIG_DEBUG_LIST's checks: each of the two is called on both sides
 * (a refill's list_add, a drain's), and the model books them per check,
 * not per caller.
 */
#define FAULT_TERMS                                               \
	(1U << COST_FAULT_BASE | 1U << COST_CLEAR_PAGE |          \
	 1U << COST_COPY_PAGE | 1U << COST_PCP_ALLOC |            \
	 1U << COST_BUDDY_ALLOC_PAGE | 1U << PROF_INIT_ON_ALLOC | \
	 1U << COST_LRU_ADD_PAGE)

static const struct {
	struct prof_fn fn;
	u32 terms; /* bit per enum prof_term */
	int lock_cls; /* its takers' waits and pulls: zone, LRU or both */
	u32 sides; /* ... of these sides */
} children[] = {
	/* the whole exception: x86's entry stub (4.18: page_fault) */
	{ { { "page_fault", "asm_exc_page_fault", "asm_exc_page_fault" } },
	  FAULT_TERMS | 1U << COST_FAULT_TRAP | 1U << COST_FAULT_TRAP_RETURN,
	  -1,
	  1U << SIDE_ALLOC },
	{ { { "handle_mm_fault", "handle_mm_fault", "handle_mm_fault" } },
	  FAULT_TERMS,
	  -1,
	  1U << SIDE_ALLOC },
	{ { { "get_page_from_freelist", "get_page_from_freelist",
	      "get_page_from_freelist" } },
	  1U << COST_PCP_ALLOC | 1U << COST_BUDDY_ALLOC_PAGE |
		  1U << PROF_INIT_ON_ALLOC,
	  LOCK_ZONE,
	  1U << SIDE_ALLOC },
	{ { { "free_unref_page_list", "free_unref_page_list",
	      "free_unref_folios" } },
	  1U << COST_PCP_FREE | 1U << COST_BUDDY_FREE_PAGE |
		  1U << COST_BUDDY_FREE_UNMERGED,
	  LOCK_ZONE,
	  1U << SIDE_FREE },
};

/* every term's function, the spin, the irq enable, user: an upper bound */
#define MAX_PROF_ROWS (NR_PROF_TERMS + 3)

struct prof_row {
	const char *fn;
	double ps;
};

static enum prof_era prof_era(void)
{
	if (!strcmp(pcp_policy.gen.name, "4.18"))
		return ERA_4_18;
	if (!strcmp(pcp_policy.gen.name, "6.6"))
		return ERA_6_6;
	return ERA_6_18;
}

/* How one run's profile is read: its kernel's names, its sampling event. */
struct prof_view {
	enum prof_era era;
	bool cpu_clock; /* sampled by cpu-clock: samples wait for irqs on */
};

static const char *term_name(int term, const struct prof_view *v)
{
	enum prof_era era = v->era;

	if (v->cpu_clock && IRQSAVE_TERMS & 1U << term)
		return IRQ_ENABLE_FN;
	if (term == PROF_INIT_ON_ALLOC) /* the same clear, another caller */
		term = COST_CLEAR_PAGE;
	if (engine_arm64() && arm64_fn[term].name[era])
		return arm64_fn[term].name[era];
	if (term == COST_CLEAR_PAGE)
		return erms_fn[engine_clear_page_erms()];
	return term_fn[term].name[era];
}

/* Children row @i's function: arm64's exception has no x86 entry stub. */
static const char *child_name(int i, enum prof_era era)
{
	if (engine_arm64() && children[i].terms & 1U << COST_FAULT_TRAP)
		return arm64_fn[COST_FAULT_TRAP].name[era];
	return children[i].fn.name[era];
}

/* Add @ps to @fn's row of @rows (@n of them so far). */
static void add_row(struct prof_row *rows, int *n, const char *fn, double ps)
{
	int i;

	if (!fn || ps <= 0)
		return;
	for (i = 0; i < *n && strcmp(rows[i].fn, fn); i++)
		;
	if (i == *n)
		rows[(*n)++] = (struct prof_row){ fn, 0 };
	rows[i].ps += ps;
}

/* The taker row of lock caller @id, or -1. */
static int taker_of(int id)
{
	const char *name = lock_caller_name(id);

	for (int i = 0; i < (int)ARRAY_SIZE(takers); i++)
		if (name && !strcmp(takers[i].caller, name))
			return i;
	return -1;
}

/* Waits (ps) and hold starts of lock class @cls's takers on @sides. */
static void lock_ps(const struct cpu_stats *t, int cls, u32 sides, double *wait,
		    double *pull)
{
	*wait = *pull = 0;
	for (int id = 0; id < NR_LOCK_CALLERS; id++) {
		const struct lock_caller_stat *c = &t->lock[cls].callers[id];
		int k = taker_of(id);

		if (k < 0 || !(sides & 1U << takers[k].side))
			continue;
		*wait += (double)c->wait_ns * 1000;
		*pull += (double)c->pull_ps;
	}
}

static int by_share(const void *a, const void *b)
{
	const struct prof_row *x = a, *y = b;

	if (x->ps != y->ps)
		return x->ps < y->ps ? 1 : -1;
	return strcmp(x->fn, y->fn);
}

static cJSON *rows_json(struct prof_row *rows, int n, double whole)
{
	cJSON *o = cJSON_CreateObject();

	qsort(rows, (size_t)n, sizeof(*rows), by_share);
	for (int i = 0; i < n; i++)
		cJSON_AddNumberToObject(o, rows[i].fn,
					100.0 * rows[i].ps / whole);
	return o;
}

/*
 * The part of @term's time a cpu-clock profile samples after the return
 * to user space: the trap's return (its exit work and iret), else none.
 */
static double trap_return_ps(const struct cpu_stats *t, int term,
			     const struct prof_view *v)
{
	if (!v->cpu_clock || term != COST_FAULT_TRAP_RETURN)
		return 0;
	return (double)t->prof_ps[term];
}

/* Self time per function: every term, the spins, the holds' starts. */
static int self_rows(const struct cpu_stats *t, const struct prof_view *v,
		     struct prof_row *rows)
{
	int n = 0;

	for (int term = 0; term < NR_PROF_TERMS; term++)
		add_row(rows, &n, term_name(term, v),
			(double)t->prof_ps[term] - trap_return_ps(t, term, v));
	add_row(rows, &n, "user", trap_return_ps(t, COST_FAULT_TRAP_RETURN, v));
	for (int cls = LOCK_ZONE; cls <= LOCK_LRU; cls++) {
		for (int id = 0; id < NR_LOCK_CALLERS; id++) {
			const struct lock_caller_stat *c =
				&t->lock[cls].callers[id];
			int k = taker_of(id);

			if (k < 0)
				continue;
			add_row(rows, &n,
				v->cpu_clock ? IRQ_ENABLE_FN
					     : spin_fn[engine_arm64()],
				(double)c->wait_ns * 1000);
			add_row(rows, &n, term_name(takers[k].term, v),
				(double)c->pull_ps);
		}
	}
	return n;
}

/* The result's perf_profile of the sim engine's run @r. */
cJSON *perf_profile_json(const struct spec *s, const struct run_result *r)
{
	const struct cpu_stats *t = &r->total;
	double whole = (double)t->window_ns * 1000;
	const struct prof_view v = {
		.era = prof_era(),
		.cpu_clock =
			s->instrument.kind == INSTRUMENT_PERF_PROFILE_CPU_CLOCK,
	};
	struct prof_row rows[MAX_PROF_ROWS];
	cJSON *o = cJSON_CreateObject(), *ch;
	double attributed = 0;
	int n;

	n = self_rows(t, &v, rows);

	for (int i = 0; i < n; i++)
		attributed += rows[i].ps;
	/*
	 * perf never samples its own sampling: the PMU is off in the PMI
	 * handler, and a cpu-clock sample is the hrtimer interrupt that takes
	 * it. Its shares are of the time it could sample, so the samples'
	 * own cost leaves the whole, as it does in `perf report`.
	 */
	if (s->instrument.kind == INSTRUMENT_PERF_PROFILE || v.cpu_clock)
		whole -= (double)t->prof_ps[PROF_INSTRUMENT];
	/* the window is counted in ns, the terms in ps: within rounding */
	whole = max(whole, attributed);
	if (whole <= 0)
		whole = 1;
	cJSON_AddStringToObject(
		o, "method",
		v.cpu_clock
			? "the sim's cost terms, lock waits and hold starts, "
			  "each charged to the kernel function a cpu-clock "
			  "sample would land in: where interrupts are enabled "
			  "again (docs/machines.md, \"Where the cycles go\"); "
			  "% of the CPU time of every task's measured window "
			  "less the samples' own cost, which no sample sees"
			: "the sim's cost terms, lock waits and hold starts, "
			  "each charged to the kernel function a cycles sample "
			  "would land in (docs/machines.md, \"Where the cycles "
			  "go\"); % of the CPU time of every task's measured "
			  "window, less a perf-profile's own samples");
	cJSON_AddNumberToObject(o, "cpu_time_s", whole / 1e12);
	cJSON_AddItemToObject(o, "self", rows_json(rows, n, whole));
	ch = cJSON_AddObjectToObject(o, "children");
	for (int i = 0; i < (int)ARRAY_SIZE(children); i++) {
		double ps = 0, wait, pull;

		for (int term = 0; term < NR_PROF_TERMS; term++)
			if (children[i].terms & 1U << term)
				ps += (double)t->prof_ps[term] -
				      trap_return_ps(t, term, &v);
		for (int cls = LOCK_ZONE; cls <= LOCK_LRU; cls++) {
			if (children[i].lock_cls >= 0 &&
			    children[i].lock_cls != cls)
				continue;
			lock_ps(t, cls, children[i].sides, &wait, &pull);
			ps += wait + pull;
		}
		cJSON_AddNumberToObject(ch, child_name(i, v.era),
					100.0 * ps / whole);
	}
	cJSON_AddNumberToObject(o, "unattributed_pct",
				100.0 * (whole - attributed) / whole);
	return o;
}
