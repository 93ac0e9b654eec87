/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sim platform's internals: virtual CPUs and their scheduler (sched.c),
 * the machine being simulated (machine.c), shared with its locks (lock.c)
 * and engine (engine.c).
 */
#ifndef PCPLAB_SIM_H
#define PCPLAB_SIM_H

#include <cjson/cJSON.h>

#include <pcplab/engine.h>
#include "fcontext.h"

struct vcpu {
	struct vcpu_hot hot; /* clock, id, stats, cost: see platform.h */
	fcontext_t ctx;
	struct vcpu *next; /* next waiter on the same lock */
	u64 wait_from; /* when it started waiting (ps) */
	u64 cost[NR_COST_KINDS];
	u64 stolen; /* extra ps per page while a waiter spins (lock.c) */
	void (*fn)(void *arg);
	void *arg;
	void *stack;
	size_t stack_size;
	bool done;
	int scale_max_steps; /* scheduled changes its clock has passed */
	int scale_max; /* the value the last of them set */
	u64 next_sample; /* perf-profile: when its next sample is due (ps) */
};

enum cpu_distance { DIST_SAME, DIST_SMT, DIST_SOCKET, DIST_REMOTE, NR_DIST };

/*
 * Public facts of the hardware (docs/machines.md): what a user can look up
 * for a CPU and its platform, filled from the microarchitecture table when
 * the profile names a cpu_model. Latencies in ns.
 */
struct sim_hardware {
	double llc_mb; /* last-level cache of one socket, MiB */
	double llc_ns; /* LLC hit */
	double dram_ns; /* idle load from the local node's DRAM */
	double remote_dram_ns; /* ... from another socket's DRAM */
	double smt_ns; /* a cache line between the two threads of a core */
	double socket_ns; /* ... between two cores of a socket (ring, mesh) */
	double remote_ns; /* ... between two sockets */
	double mem_channels; /* DRAM channels of one socket */
	double mem_mts; /* their transfer rate, MT/s */
	double turbo_ghz; /* the clock with one core busy */
	double all_core_ghz; /* ... with every core busy (the turbo, not base) */
	double mem_gbs; /* measured store bandwidth of a socket; 0: derive */
	double ipc; /* instructions per clock, relative to a Skylake core */
	bool meltdown; /* KPTI on every kernel entry (Linux >= 4.15) */
	bool erms; /* rep stosb fills lines without reading them (no RFO) */
	bool vm_guest; /* a guest: its misses pay two-dimensional walks */
	bool arm64; /* an arm64 core: perf_profile takes arm64's names */
};

/*
 * The global constants (python/pcplab/machines/constants.toml, fitted by
 * `pcplab fit`): the same for every machine.
 */
struct sim_constants {
	double fault_cycles_4; /* a 4.x page fault's core work */
	double fault_cycles_6; /* ... on the folio fault path (5.16+) */
	double kpti_fault_cycles; /* CR3 switches of a KPTI entry and exit */
	double fault_trap_cycles; /* the bare exception's delivery and entry */
	double fault_trap_return_cycles; /* ... and its return to user */
	double fault_misses; /* lines a fault misses (struct page, ptes) */
	double clear_bytes_per_cycle; /* clear_page() at the core's speed */
	double hot_write_bytes_per_cycle; /* a store to lines in L1/L2 */
	double mem_bw_efficiency; /* share of the DRAM peak a socket delivers */
	double pcp_alloc_cycles, pcp_free_cycles; /* pcp fast paths */
	double zone_alloc_page_cycles; /* __rmqueue + expand per block */
	double zone_free_page_cycles; /* __free_one_page per page */
	double zone_cycles_6_factor; /* both of them on a 5.16+ kernel */
	double zone_page_misses; /* cold lines per page under zone->lock */
	double lru_page_cycles; /* lruvec add or del of one folio */
	double unmap_page_cycles; /* zap_pte_range, rmap, TLB per page */
	double mmap_cycles; /* one mmap + munmap pair */
	double list_add_check_cycles; /* CONFIG_DEBUG_LIST's add check */
	double list_del_check_cycles; /* ... and its del check */
	double smt_factor; /* a task with a busy SMT sibling is this slower */
	double zone_lock_lines; /* lines a new zone->lock holder pulls */
	double zone_lock_misses; /* cold lines it then misses (free lists) */
	double spin_steal_lines; /* lines per page a spinning waiter steals */
	double lru_lock_lines; /* ... lru_lock holder */
	double work_cv; /* share of a fault's work that varies */
	double guest_miss_factor; /* a guest's miss with its 2-D walk share */
	double ipc_weight; /* how much of it the work outside the locks gains */
	double zone_ipc_weight; /* ... and the buddy's per-page work */
};

/* The machine a run simulates: topology, facts and derived costs. */
struct sim_machine {
	char name[64];
	int sockets, numa_nodes, cores_per_socket, smt;
	int nr_cpus;
	double ghz; /* base clock, every core busy */
	double memory_gb;
	double clock_ghz; /* the clock of this run's load (sim_machine_derive) */
	struct sim_hardware hw;
	struct sim_constants k;
	double miss_ns; /* a cold line, LLC or DRAM (sim_machine_derive) */
	u64 cost[NR_COST_KINDS]; /* ps per unit, one task per core */
	u64 hot_write_ps; /* writing a page whose lines the CPU holds */
	u64 fault_bare_ps; /* the bare exception, out of the fitted fault */
	double cost_override_ns[NR_COST_KINDS]; /* the profile's, or < 0 */
	double perf_sample_ns; /* one perf sample: [costs]' measured, or < 0 */
	u64 page_xfer_ps; /* PAGE_SIZE through one node's DRAM channels */
	int clear_pages; /* pages of DRAM traffic a clear_page() makes */
	u64 remote_page_ps; /* a remote page's first miss, beyond a local */
	double smt_factor; /* cost multiplier with a busy sibling */
	double work_cv; /* share of a fault's work that varies */
	u64 xfer[NR_DIST]; /* ps to move a cache line */
	double lock_lines[NR_LOCK_CLASSES]; /* lines a holder pulls over */
	u64 lock_pull[NR_LOCK_CLASSES][NR_DIST]; /* their time, by distance */
	u64 spin_steal
		[NR_DIST]; /* a page's extra miss with a waiter spinning */
	bool ticket; /* ticket lock instead of queued */
	/*
	 * cpu_core() and cpu_socket() of every CPU, numbered once per
	 * profile (sim_topology_init()): cpu_distance() runs on every lock
	 * acquisition and release, where their divisions would cost more
	 * than the rest of the lock's bookkeeping.
	 */
	u16 core_of[NR_CPUS];
	u16 socket_of[NR_CPUS];
};

extern struct sim_machine sim_machine;

/* machine.c */
int sim_machine_parse(const cJSON *o, char *err);
void sim_machine_derive(const struct kernel_gen *gen, int tasks_per_node,
			double busy_share, unsigned long size_mib);
cJSON *sim_machine_json(void);
int cpu_socket(int cpu);
int cpu_core(int cpu);
int cpu_node_of(int cpu);
int cpu_sibling(int cpu);
enum cpu_distance cpu_distance(int a, int b);
void sim_topology_init(void);

/* dram.c */
void dram_init(void);
void dram_write_page(const struct page *page, u64 core_ps, int reads, int term);

/* instrument.c */
extern u64 sim_perf_period; /* ps between perf samples; 0: no sampling */
void sim_instrument_start(const struct instrument *in);
void sim_perf_due(struct vcpu *me, bool locked);
void sim_perf_absorb(struct vcpu *me);

/* sched.c */
int sim_init(int nr_vcpus);
void sim_exit(void);
struct vcpu *sim_vcpu(int id);
void sim_start(struct vcpu *v, void (*fn)(void *), void *arg);
void sim_run(void);
void sim_sync(void);
void sim_block(void);
void sim_wake(struct vcpu *v);
struct vcpu *sim_current(void);
size_t sim_stack_bytes(void);
void sim_scale_max_schedule(const u64 *at_ps, const int *values, int n);

#endif
