// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated machine: its topology, the public facts of its hardware,
 * and every cost the simulator charges, derived from those facts and a few
 * global constants (python/pcplab/machines/constants.toml, fitted by
 * `pcplab fit` on the published figures of python/pcplab/reference). A machine differs from another
 * only by its facts; a profile may still replace a derived cost by a
 * measured one ([costs]).
 *
 * Derivation (docs/machines.md), each cost split by what it waits for:
 *   core work scales with the clock: cycles / GHz;
 *   memory stalls do not: misses x the latency of a cold line, which is an
 *   LLC hit as often as the nodes' struct pages the run churns fit in the
 *   LLC, a DRAM load otherwise (a guest's DRAM load also pays its share of
 *   two-dimensional page walks);
 *   a cache line moves between SMT siblings, within a socket (ring, mesh or
 *   chiplets: the socket_ns fact), or between sockets (remote_ns);
 *   clear_page() runs at the core's speed but shares the node's DRAM
 *   bandwidth with every other CPU of the node (dram.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <pcplab/mm.h>
#include "sim.h"

struct sim_machine sim_machine;

/* A number a profile gives: its JSON key, its range, where it goes. */
struct machine_key {
	const char *name;
	double lo, hi;
	size_t offset;
};

#define HW(field, lo, hi)                                            \
	{                                                            \
#field, lo, hi, offsetof(struct sim_hardware, field) \
	}
#define K(field, lo, hi)                                              \
	{                                                             \
#field, lo, hi, offsetof(struct sim_constants, field) \
	}

/* [hardware]: one row per fact (the booleans are read apart). */
static const struct machine_key hardware_keys[] = {
	HW(llc_mb, 0.25, 4096),	   HW(llc_ns, 1, 200),
	HW(dram_ns, 20, 1000),	   HW(remote_dram_ns, 20, 2000),
	HW(smt_ns, 0, 200),	   HW(socket_ns, 0, 1000),
	HW(remote_ns, 0, 2000),	   HW(mem_channels, 1, 32),
	HW(mem_mts, 100, 20000),   HW(turbo_ghz, 0.1, 10),
	HW(all_core_ghz, 0.1, 10), HW(mem_gbs, 0, 10000),
	HW(ipc, 0.2, 5),
};

/* The global constants: one row each, with the range that makes sense. */
static const struct machine_key constant_keys[] = {
	K(fault_cycles_4, 0, 1e6),
	K(fault_cycles_6, 0, 1e6),
	K(kpti_fault_cycles, 0, 1e5),
	K(fault_trap_cycles, 0, 1e5),
	K(fault_trap_return_cycles, 0, 1e5),
	K(fault_misses, 0, 100),
	K(clear_bytes_per_cycle, 0.1, 256),
	K(hot_write_bytes_per_cycle, 0.1, 1024),
	K(mem_bw_efficiency, 0.05, 1),
	K(pcp_alloc_cycles, 0, 1e5),
	K(pcp_free_cycles, 0, 1e5),
	K(zone_alloc_page_cycles, 0, 1e5),
	K(zone_free_page_cycles, 0, 1e5),
	K(zone_cycles_6_factor, 0.01, 100),
	K(zone_page_misses, 0, 16),
	K(lru_page_cycles, 0, 1e5),
	K(unmap_page_cycles, 0, 1e6),
	K(mmap_cycles, 0, 1e8),
	K(list_add_check_cycles, 0, 1e4),
	K(list_del_check_cycles, 0, 1e4),
	K(smt_factor, 1, 4),
	K(zone_lock_lines, 0, 256),
	K(zone_lock_misses, 0, 256),
	K(spin_steal_lines, 0, 16),
	K(lru_lock_lines, 0, 256),
	K(work_cv, 0, 1),
	K(guest_miss_factor, 1, 20),
	K(ipc_weight, 0, 2),
	K(zone_ipc_weight, 0, 3),
};

/*
 * [costs]: a measured cost in ns replaces the derived one (see enum
 * cost_kind). The bounds are 50 to 350 times what the model derives for
 * skylake-ex; a cost beyond one is a typo, and one of 1e308 ns would
 * overflow the virtual clock (a run of 0 ops/s).
 */
#define COST(kind, field, hi)     \
	[kind] = { #field, 0, hi, \
		   offsetof(struct sim_machine, cost_override_ns[kind]) }
static const struct machine_key cost_keys[NR_COST_KINDS] = {
	COST(COST_FAULT_TRAP, fault_trap_ns, 1e5),
	COST(COST_FAULT_TRAP_RETURN, fault_trap_return_ns, 1e5),
	COST(COST_FAULT_BASE, fault_base_ns, 1e5),
	COST(COST_CLEAR_PAGE, clear_page_ns, 1e5),
	COST(COST_COPY_PAGE, copy_page_ns, 1e5),
	COST(COST_PCP_ALLOC, pcp_alloc_ns, 1e4),
	COST(COST_PCP_FREE, pcp_free_ns, 1e4),
	COST(COST_BUDDY_ALLOC_PAGE, buddy_alloc_page_ns, 1e4),
	COST(COST_BUDDY_FREE_PAGE, buddy_free_page_ns, 1e4),
	COST(COST_BUDDY_FREE_UNMERGED, buddy_free_unmerged_ns, 1e4),
	COST(COST_LRU_ADD_PAGE, lru_add_page_ns, 1e4),
	COST(COST_LRU_DEL_PAGE, lru_del_page_ns, 1e4),
	COST(COST_UNMAP_PAGE, unmap_page_ns, 1e5),
	COST(COST_MMAP, mmap_ns, 1e6),
	COST(COST_LIST_ADD_CHECK, list_add_check_ns, 1e4),
	COST(COST_LIST_DEL_CHECK, list_del_check_ns, 1e4),
};

/*
 * [costs] an instrument's: what one perf sample with its call chain cost
 * the kernel this profile measured (pcplab calibrate times page_fault1
 * with and without perf record), where instrument.c would otherwise
 * charge its estimate. Not a cost of the kernel: a run without perf
 * charges nothing.
 */
static const struct machine_key perf_sample_key = {
	"perf_sample_ns", 0, 1e6, offsetof(struct sim_machine, perf_sample_ns)
};

/* The [costs] key named @name: a cost kind's, the perf sample's, or NULL. */
static const struct machine_key *cost_key(const char *name)
{
	for (int i = 0; i < NR_COST_KINDS; i++)
		if (!strcmp(name, cost_keys[i].name))
			return &cost_keys[i];
	return strcmp(name, perf_sample_key.name) ? NULL : &perf_sample_key;
}

static int fail(char *err, const char *what, const char *key)
{
	snprintf(err, ERRLEN, "machine profile: %s '%s'", what, key);
	return -1;
}

static int get_number(const cJSON *o, const char *key, double lo, double hi,
		      double *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		return fail(err, "needs a number for", key);
	if (v->valuedouble < lo || v->valuedouble > hi ||
	    isnan(v->valuedouble)) {
		snprintf(
			err, ERRLEN,
			"machine profile: '%s' = %g is out of range; allowed %g..%g",
			key, v->valuedouble, lo, hi);
		return -1;
	}
	*out = v->valuedouble;
	return 0;
}

/*
 * Read every row of @keys from table @o into the struct at @base; besides
 * them the table may hold only the booleans named in @flags.
 */
static int get_table(const cJSON *o, const char *table,
		     const struct machine_key *keys, size_t nr,
		     const char *const *flags, void *base, char *err)
{
	const cJSON *item;

	if (!cJSON_IsObject(o))
		return fail(err, "needs a table", table);
	for (size_t i = 0; i < nr; i++)
		if (get_number(o, keys[i].name, keys[i].lo, keys[i].hi,
			       (double *)((char *)base + keys[i].offset), err))
			return -1;
	cJSON_ArrayForEach (item, o) {
		bool known = false;

		for (size_t i = 0; i < nr; i++)
			known |= !strcmp(item->string, keys[i].name);
		for (size_t i = 0; flags && flags[i]; i++)
			known |= !strcmp(item->string, flags[i]);
		if (!known) {
			snprintf(err, ERRLEN,
				 "machine profile: unknown key '%s' in [%s]",
				 item->string, table);
			return -1;
		}
	}
	return 0;
}

static int get_bool(const cJSON *o, const char *key, bool *out, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsBool(v))
		return fail(err, "needs true or false for", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

static int parse_topology(const cJSON *t, char *err)
{
	static const char *const keys[] = {
		"sockets", "numa_nodes", "cores_per_socket",
		"smt",	   "ghz",	 "memory_gb"
	};
	static const char allowed[] =
		"sockets, numa_nodes, cores_per_socket, smt, ghz, memory_gb";
	/* the first four count things; smt is a width CPUs have: 1, 2, 4, 8 */
	const double lo[] = { 1, 1, 1, 1, 0.1, 0.1 };
	/* memory_gb: what the model's memory map reaches (memmap.c) */
	const double hi[] = {
		64, 64, 1024,
		8,  10, (double)(sparse_max_pages() >> (30 - PAGE_SHIFT))
	};
	struct sim_machine *m = &sim_machine;
	const cJSON *item;
	double v[6];

	if (!cJSON_IsObject(t)) {
		snprintf(err, ERRLEN,
			 "machine profile: [topology] is missing; give %s",
			 allowed);
		return -1;
	}
	cJSON_ArrayForEach (item, t) {
		int i = 0;

		while (i < 6 && strcmp(item->string, keys[i]))
			i++;
		if (i == 6) {
			snprintf(
				err, ERRLEN,
				"machine profile: unknown key '%s' in [topology]; allowed %s",
				item->string, allowed);
			return -1;
		}
	}
	for (int i = 0; i < 6; i++) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(t, keys[i]);
		bool whole = i < 4;

		if (!cJSON_IsNumber(x) ||
		    (whole && x->valuedouble != floor(x->valuedouble))) {
			if (i == 3)
				snprintf(
					err, ERRLEN,
					"machine profile: [topology] 'smt' needs an integer; allowed 1, 2, 4, 8");
			else
				snprintf(
					err, ERRLEN,
					"machine profile: [topology] '%s' needs %s; allowed %g..%g",
					keys[i],
					whole ? "an integer" : "a number",
					lo[i], hi[i]);
			return -1;
		}
		v[i] = x->valuedouble;
		if (i == 3 && v[3] != 1 && v[3] != 2 && v[3] != 4 &&
		    v[3] != 8) {
			snprintf(
				err, ERRLEN,
				"machine profile: 'smt' = %g is no SMT width; allowed 1, 2, 4, 8",
				v[3]);
			return -1;
		}
		if (v[i] < lo[i] || v[i] > hi[i] || isnan(v[i])) {
			snprintf(
				err, ERRLEN,
				"machine profile: '%s' = %g is out of range; allowed %g..%g",
				keys[i], v[i], lo[i], hi[i]);
			return -1;
		}
	}
	m->sockets = (int)v[0];
	m->numa_nodes = (int)v[1];
	m->cores_per_socket = (int)v[2];
	m->smt = (int)v[3];
	m->ghz = v[4];
	m->memory_gb = v[5];
	m->nr_cpus = m->sockets * m->cores_per_socket * m->smt;
	if (m->nr_cpus > NR_CPUS) {
		snprintf(
			err, ERRLEN,
			"machine profile: [topology] has %d CPUs (sockets x cores_per_socket x smt); allowed at most %d",
			m->nr_cpus, NR_CPUS);
		return -1;
	}
	if (m->numa_nodes % m->sockets && m->sockets % m->numa_nodes) {
		snprintf(
			err, ERRLEN,
			"machine profile: [topology] numa_nodes %d is neither a multiple nor a divisor of sockets %d; allowed a multiple or divisor",
			m->numa_nodes, m->sockets);
		return -1;
	}
	if (m->cores_per_socket * m->sockets % m->numa_nodes) {
		snprintf(
			err, ERRLEN,
			"machine profile: [topology] cannot split %d cores evenly over %d numa_nodes; allowed numa_nodes that divide sockets x cores_per_socket",
			m->cores_per_socket * m->sockets, m->numa_nodes);
		return -1;
	}
	sim_topology_init();
	return 0;
}

static int parse_hardware(const cJSON *h, char *err)
{
	static const char *const flags[] = { "meltdown", "erms", "vm_guest",
					     "arm64", NULL };
	struct sim_hardware *hw = &sim_machine.hw;

	if (get_table(h, "hardware", hardware_keys, ARRAY_SIZE(hardware_keys),
		      flags, hw, err) ||
	    get_bool(h, "meltdown", &hw->meltdown, err) ||
	    get_bool(h, "erms", &hw->erms, err) ||
	    get_bool(h, "vm_guest", &hw->vm_guest, err))
		return -1;
	/* optional: an x86 machine unless its microarchitecture says arm64 */
	hw->arm64 = false;
	if (cJSON_GetObjectItemCaseSensitive(h, "arm64") &&
	    get_bool(h, "arm64", &hw->arm64, err))
		return -1;
	/* a turbo below the base clock is a typo, not a machine */
	if (hw->all_core_ghz < sim_machine.ghz) {
		snprintf(
			err, ERRLEN,
			"machine profile: 'all_core_ghz' = %g is out of range; allowed %g (ghz)..10",
			hw->all_core_ghz, sim_machine.ghz);
		return -1;
	}
	return 0;
}

/*
 * Cycles at the clock, on any core: clear_page()'s rep stos runs at the
 * core's store width, and the LRU work under lru_lock is a chain of
 * dependent loads (LRU list pointers, the lines pulled from the last
 * holder) that a wider core cannot overlap.
 */
static u64 cycles_ps(double cycles)
{
	return (u64)llround(cycles * 1000.0 / sim_machine.clock_ghz);
}

/*
 * Kernel code's cycles counted on a Skylake core: a wider core retires the
 * same code in fewer, its published IPC to the power @weight (the vendors'
 * IPC figures come from SPEC-like suites, not from the page allocator).
 * Code outside the locks takes ipc_weight. The buddy's per-page work under
 * zone->lock takes zone_ipc_weight: its lines are mostly ones the holder
 * touched moments before (the pages it freed to the pcp list, their
 * neighbours; the cold ones are charged apart, as zone_page_misses), short
 * chains of list and struct page updates that a wider window overlaps
 * better than the fault's code; the kernel's free per page took 1.6x
 * fewer cycles on Sapphire Rapids than on the two Skylake-core parts of
 * the same table (docs/fidelity.md).
 */
static u64 ipc_ps(double cycles, double weight)
{
	return (u64)llround(
		cycles * 1000.0 /
		(sim_machine.clock_ghz * pow(sim_machine.hw.ipc, weight)));
}

/* Code outside the locks (ipc_ps() with ipc_weight). */
static u64 work_ps(double cycles)
{
	return ipc_ps(cycles, sim_machine.k.ipc_weight);
}

static u64 ns_ps(double ns)
{
	return (u64)llround(ns * 1000.0);
}

/*
 * The costs of a run of @gen with @tasks_per_node tasks, each touching
 * @size_mib, on sockets whose busiest has @busy_share of its cores busy.
 * The share of cold lines the LLC still holds depends on how many struct
 * pages (64 bytes each in the kernel) the node's tasks churn; the clock
 * falls from the maximum turbo (one core busy) to the all-core turbo (all
 * busy) in proportion, with no constant of its own: a busy part runs its
 * all-core turbo, not its base clock, which only holds under AVX or a
 * power limit this workload does not reach.
 */
void sim_machine_derive(const struct kernel_gen *gen, int tasks_per_node,
			double busy_share, unsigned long size_mib)
{
	struct sim_machine *m = &sim_machine;
	const struct sim_hardware *hw = &m->hw;
	const struct sim_constants *k = &m->k;
	double churn = (double)tasks_per_node * (double)size_mib * 1048576.0 /
		       (double)PAGE_SIZE * 64.0;
	double llc = hw->llc_mb * 1048576.0 * m->sockets / m->numa_nodes;
	double hit = churn > llc ? llc / churn : 1.0;
	double dram = hw->dram_ns * (hw->vm_guest ? k->guest_miss_factor : 1);
	double clear = (double)PAGE_SIZE / k->clear_bytes_per_cycle;
	double fault =
		gen && gen->folio_fault ? k->fault_cycles_6 : k->fault_cycles_4;
	/*
	 * The buddy's cycles per page differ by kernel generation as the
	 * fault's do: one fitted factor from 6.6 on. The code from v4.18 to
	 * v6.6 accounts for little of it (the v5.18 single-pass drain moved
	 * the pcp list_del into the hold; the per-page pageblock re-read and
	 * account_freepages() are v6.10), so most of it has no named commit
	 * (constants.toml, docs/machines.md). Its misses are the machine's,
	 * not the generation's.
	 */
	double zone_cycles =
		gen && gen->folio_fault ? k->zone_cycles_6_factor : 1;
	double socket_bw = hw->mem_gbs > 0 ? hw->mem_gbs * 1e9
					   : hw->mem_channels * hw->mem_mts *
						     8e6 * k->mem_bw_efficiency;
	double node_bw = socket_bw * m->sockets / m->numa_nodes;
	u64 buddy_misses; /* ps: the struct page misses of a buddy page */
	u64 kpti; /* ps: KPTI's two CR3 switches of a trap */
	u64 fault_work, bare_in, bare_out; /* ps: the fault, its bare trap */

	m->clock_ghz =
		hw->all_core_ghz +
		fmax(0, hw->turbo_ghz - hw->all_core_ghz) * (1 - busy_share);
	m->miss_ns = hit * hw->llc_ns + (1 - hit) * dram;
	buddy_misses = ns_ps(k->zone_page_misses * m->miss_ns);
	/*
	 * The trap's own cost, outside handle_mm_fault: KPTI's CR3 switches
	 * where the CPU needs them, one on entry (SWITCH_TO_KERNEL_CR3) and
	 * one on the return (SWITCH_TO_USER_CR3), and the bare exception:
	 * the hardware's delivery with the entry code, and the return to
	 * user, in cycles at the clock (one published measurement, no figure
	 * per micro-architecture: constants.toml). The bare exception is
	 * part of the fitted fault cycles, so it is taken out of
	 * handle_mm_fault's share, never added: it says where the fault's
	 * time goes. perf_profile.c names the entry exc_page_fault (the C
	 * handler, where a cpu-clock sample of it lands at the irq enable);
	 * under cycles the hardware's delivery would sample in
	 * asm_exc_page_fault's own entry code instead, a split the model does
	 * not make: both are in asm_exc_page_fault's children, outside
	 * handle_mm_fault's. A profile's fault_trap_ns and
	 * fault_trap_return_ns are measured (pcplab calibrate: read faults
	 * that map the zero page, split by perf record).
	 */
	kpti = hw->meltdown ? work_ps(k->kpti_fault_cycles) : 0;
	fault_work = work_ps(fault);
	bare_in = min(cycles_ps(k->fault_trap_cycles), fault_work);
	bare_out = min(cycles_ps(k->fault_trap_return_cycles),
		       fault_work - bare_in);
	m->fault_bare_ps = bare_in + bare_out;
	m->cost[COST_FAULT_TRAP_RETURN] = kpti / 2 + bare_out;
	m->cost[COST_FAULT_TRAP] = kpti - kpti / 2 + bare_in;
	m->cost[COST_FAULT_BASE] = fault_work - m->fault_bare_ps +
				   ns_ps(k->fault_misses * m->miss_ns);
	m->cost[COST_CLEAR_PAGE] = cycles_ps(clear);
	m->hot_write_ps =
		cycles_ps((double)PAGE_SIZE / k->hot_write_bytes_per_cycle);
	m->cost[COST_COPY_PAGE] = cycles_ps(2 * clear);
	m->cost[COST_PCP_ALLOC] = work_ps(k->pcp_alloc_cycles);
	m->cost[COST_PCP_FREE] = work_ps(k->pcp_free_cycles);
	m->cost[COST_BUDDY_ALLOC_PAGE] =
		ipc_ps(k->zone_alloc_page_cycles * zone_cycles,
		       k->zone_ipc_weight) +
		buddy_misses;
	/*
	 * An order-0 page freed without a merge: the same work, none of the
	 * misses, which are the buddies' struct pages ("the most time
	 * consuming part of operations under zone->lock is cache misses on
	 * struct page", Aaron Lu, linux-mm 2018-02-05): the page's own line
	 * was read outside the lock when it was picked (0a5f4e5b4562).
	 */
	m->cost[COST_BUDDY_FREE_UNMERGED] = ipc_ps(
		k->zone_free_page_cycles * zone_cycles, k->zone_ipc_weight);
	m->cost[COST_BUDDY_FREE_PAGE] =
		m->cost[COST_BUDDY_FREE_UNMERGED] + buddy_misses;
	m->cost[COST_LRU_ADD_PAGE] = cycles_ps(k->lru_page_cycles);
	m->cost[COST_LRU_DEL_PAGE] = cycles_ps(k->lru_page_cycles);
	m->cost[COST_UNMAP_PAGE] = work_ps(k->unmap_page_cycles);
	m->cost[COST_MMAP] = work_ps(k->mmap_cycles);
	/*
	 * A list check of CONFIG_DEBUG_LIST: a call, loads of the lines the
	 * list operation then writes, compares; measured on one core
	 * (bench/listcheck.c), at the clock. The neighbours' misses stay in
	 * the per-page misses of the buddy (zone_page_misses): the operation
	 * pays them with or without the check.
	 */
	m->cost[COST_LIST_ADD_CHECK] = cycles_ps(k->list_add_check_cycles);
	m->cost[COST_LIST_DEL_CHECK] = cycles_ps(k->list_del_check_cycles);
	for (int i = 0; i < NR_COST_KINDS; i++)
		if (m->cost_override_ns[i] >= 0)
			m->cost[i] = ns_ps(m->cost_override_ns[i]);
	/* a measured fault is handle_mm_fault's alone: no bare trap in it */
	if (m->cost_override_ns[COST_FAULT_BASE] >= 0)
		m->fault_bare_ps = 0;
	/*
	 * A measured buddy page is the work with its struct pages in cache
	 * (bench-fastpath times the model's own buddy, hot); the cold ones
	 * are the run's, added as to a derived cost.
	 */
	if (m->cost_override_ns[COST_BUDDY_ALLOC_PAGE] >= 0)
		m->cost[COST_BUDDY_ALLOC_PAGE] += buddy_misses;
	if (m->cost_override_ns[COST_BUDDY_FREE_PAGE] >= 0)
		m->cost[COST_BUDDY_FREE_PAGE] += buddy_misses;
	m->page_xfer_ps = (u64)llround((double)PAGE_SIZE * 1e12 / node_bw);
	/* without ERMS every line is read for ownership before it is filled */
	m->clear_pages = hw->erms ? 1 : 2;
	m->remote_page_ps = ns_ps(fmax(0, hw->remote_dram_ns - hw->dram_ns));
	m->smt_factor = k->smt_factor;
	m->work_cv = k->work_cv;
	m->xfer[DIST_SAME] = 0;
	m->xfer[DIST_SMT] = ns_ps(hw->smt_ns);
	m->xfer[DIST_SOCKET] = ns_ps(hw->socket_ns);
	m->xfer[DIST_REMOTE] = ns_ps(hw->remote_ns);
	m->lock_lines[LOCK_ZONE] = k->zone_lock_lines;
	m->lock_lines[LOCK_LRU] = k->lru_lock_lines;
	m->lock_lines[LOCK_PCP_REMOTE] =
		1; /* the queue head, moved by a free */
	/*
	 * A new holder pulls the lines the last holder wrote, at their
	 * distance, and a new zone->lock holder also misses cold lines: the
	 * struct pages of the free-list blocks it splits or merges into. An
	 * average over holders: a fraction of a line is a share of them.
	 */
	for (int d = 0; d < NR_DIST; d++)
		m->spin_steal[d] =
			(u64)llround(k->spin_steal_lines * (double)m->xfer[d]);
	for (int cls = 0; cls < NR_LOCK_CLASSES; cls++)
		for (int d = 0; d < NR_DIST; d++)
			m->lock_pull[cls][d] = (u64)llround(
				m->lock_lines[cls] * (double)m->xfer[d] +
				(cls == LOCK_ZONE ? k->zone_lock_misses *
							    m->miss_ns * 1000
						  : 0));
}

static int parse_overrides(const cJSON *costs, char *err)
{
	const cJSON *item;

	for (int i = 0; i < NR_COST_KINDS; i++)
		sim_machine.cost_override_ns[i] = -1;
	sim_machine.perf_sample_ns = -1;
	if (!costs || cJSON_IsNull(costs))
		return 0;
	if (!cJSON_IsObject(costs))
		return fail(err, "needs a table", "costs");
	cJSON_ArrayForEach (item, costs) {
		const struct machine_key *k = cost_key(item->string);

		if (!k)
			return fail(err, "has an unknown cost", item->string);
		if (get_number(costs, k->name, k->lo, k->hi,
			       (double *)((char *)&sim_machine + k->offset),
			       err))
			return -1;
	}
	return 0;
}

/* Read a machine profile (JSON of the resolved profile + constants). */
int sim_machine_parse(const cJSON *o, char *err)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
	const cJSON *lock = cJSON_GetObjectItemCaseSensitive(o, "lock");
	struct sim_machine *m = &sim_machine;

	memset(m, 0, sizeof(*m));
	if (!cJSON_IsObject(o))
		return fail(err, "must be a table, got", "machine");
	snprintf(m->name, sizeof(m->name), "%s",
		 cJSON_IsString(name) ? name->valuestring : "unnamed");
	if (parse_topology(cJSON_GetObjectItemCaseSensitive(o, "topology"),
			   err) ||
	    parse_hardware(cJSON_GetObjectItemCaseSensitive(o, "hardware"),
			   err) ||
	    get_table(cJSON_GetObjectItemCaseSensitive(o, "constants"),
		      "constants", constant_keys, ARRAY_SIZE(constant_keys),
		      NULL, &m->k, err) ||
	    parse_overrides(cJSON_GetObjectItemCaseSensitive(o, "costs"), err))
		return -1;
	if (lock && !cJSON_IsNull(lock)) {
		if (!cJSON_IsString(lock) ||
		    (strcmp(lock->valuestring, "queued") &&
		     strcmp(lock->valuestring, "ticket")))
			return fail(err, "takes lock = queued or ticket, not",
				    cJSON_IsString(lock) ? lock->valuestring
							 : "?");
		m->ticket = !strcmp(lock->valuestring, "ticket");
	}
	sim_machine_derive(NULL, 1, 1.0, 0);
	return 0;
}

/* The machine as the result reports it: topology, facts, derived costs. */
cJSON *sim_machine_json(void)
{
	struct sim_machine *m = &sim_machine;
	cJSON *o = cJSON_CreateObject(), *t, *h, *c;
	static const char *const dist[] = { "same_ns", "smt_ns", "socket_ns",
					    "remote_ns" };

	cJSON_AddStringToObject(o, "name", m->name);
	t = cJSON_AddObjectToObject(o, "topology");
	cJSON_AddNumberToObject(t, "sockets", m->sockets);
	cJSON_AddNumberToObject(t, "numa_nodes", m->numa_nodes);
	cJSON_AddNumberToObject(t, "cores_per_socket", m->cores_per_socket);
	cJSON_AddNumberToObject(t, "smt", m->smt);
	cJSON_AddNumberToObject(t, "cpus", m->nr_cpus);
	cJSON_AddNumberToObject(t, "ghz", m->ghz);
	cJSON_AddNumberToObject(t, "memory_gb", m->memory_gb);
	cJSON_AddNumberToObject(t, "clock_ghz", m->clock_ghz);
	/* the clock code outside the locks runs at, as work_ps() charges it */
	cJSON_AddNumberToObject(t, "work_ghz",
				m->clock_ghz * pow(m->hw.ipc, m->k.ipc_weight));
	h = cJSON_AddObjectToObject(o, "hardware");
	for (size_t i = 0; i < ARRAY_SIZE(hardware_keys); i++)
		cJSON_AddNumberToObject(
			h, hardware_keys[i].name,
			*(double *)((char *)&m->hw + hardware_keys[i].offset));
	cJSON_AddBoolToObject(h, "meltdown", m->hw.meltdown);
	cJSON_AddBoolToObject(h, "erms", m->hw.erms);
	cJSON_AddBoolToObject(h, "arm64", m->hw.arm64);
	cJSON_AddBoolToObject(h, "vm_guest", m->hw.vm_guest);
	c = cJSON_AddObjectToObject(o, "costs");
	for (int i = 0; i < NR_COST_KINDS; i++)
		cJSON_AddNumberToObject(c, cost_keys[i].name,
					(double)m->cost[i] / 1000.0);
	cJSON_AddNumberToObject(c, "cold_line_ns", m->miss_ns);
	cJSON_AddNumberToObject(c, "dram_page_ns",
				(double)m->page_xfer_ps / 1000.0);
	cJSON_AddNumberToObject(c, "smt_factor", m->smt_factor);
	cJSON_AddNumberToObject(c, "work_cv", m->work_cv);
	for (int i = 0; i < NR_DIST; i++)
		cJSON_AddNumberToObject(c, dist[i],
					(double)m->xfer[i] / 1000.0);
	cJSON_AddNumberToObject(c, "zone_lock_lines", m->lock_lines[LOCK_ZONE]);
	cJSON_AddNumberToObject(c, "lru_lock_lines", m->lock_lines[LOCK_LRU]);
	cJSON_AddStringToObject(o, "lock", m->ticket ? "ticket" : "queued");
	return o;
}

/*
 * CPU numbering as Linux enumerates x86 servers: first thread of every
 * core (socket by socket), then the second threads.
 */
int cpu_core(int cpu)
{
	return cpu % (sim_machine.sockets * sim_machine.cores_per_socket);
}

/* The socket of @cpu. */
int cpu_socket(int cpu)
{
	return cpu_core(cpu) / sim_machine.cores_per_socket;
}

/* The NUMA node of @cpu: sockets split evenly into numa_nodes. */
int cpu_node_of(int cpu)
{
	int cores = sim_machine.sockets * sim_machine.cores_per_socket;

	return cpu_core(cpu) * sim_machine.numa_nodes / cores;
}

/* The SMT sibling of @cpu (itself without SMT; the first of a set > 2). */
int cpu_sibling(int cpu)
{
	int cores = sim_machine.sockets * sim_machine.cores_per_socket;

	if (sim_machine.smt < 2)
		return cpu;
	return cpu < cores ? cpu + cores : cpu_core(cpu);
}

/* Number the core and socket of every CPU of the topology just set. */
void sim_topology_init(void)
{
	for (int cpu = 0; cpu < sim_machine.nr_cpus; cpu++) {
		sim_machine.core_of[cpu] = (u16)cpu_core(cpu);
		sim_machine.socket_of[cpu] = (u16)cpu_socket(cpu);
	}
}

/*
 * How far apart two CPUs are, for cache-line transfers. The engine's own
 * context (-1) is numbered by cpu_core() and cpu_socket() themselves.
 */
enum cpu_distance cpu_distance(int a, int b)
{
	const struct sim_machine *m = &sim_machine;

	if (a == b)
		return DIST_SAME;
	if (unlikely(a < 0 || b < 0)) {
		if (cpu_core(a) == cpu_core(b))
			return DIST_SMT;
		return cpu_socket(a) == cpu_socket(b) ? DIST_SOCKET
						      : DIST_REMOTE;
	}
	if (m->core_of[a] == m->core_of[b])
		return DIST_SMT;
	if (m->socket_of[a] == m->socket_of[b])
		return DIST_SOCKET;
	return DIST_REMOTE;
}

bool engine_clear_page_erms(void)
{
	return sim_machine.hw.erms;
}

bool engine_arm64(void)
{
	return sim_machine.hw.arm64;
}
