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
	void (*fn)(void *arg);
	void *arg;
	void *stack;
	size_t stack_size;
	bool done;
};

enum cpu_distance { DIST_SAME, DIST_SMT, DIST_SOCKET, DIST_REMOTE, NR_DIST };

/* The machine a run simulates: topology and derived costs (machine.c). */
struct sim_machine {
	char name[64];
	int sockets, numa_nodes, cores_per_socket, smt;
	int nr_cpus;
	double ghz;
	double memory_gb;
	u64 cost[NR_COST_KINDS]; /* ps per unit, one task per core */
	double smt_factor; /* cost multiplier with a busy sibling */
	double work_cv; /* share of a fault's work that varies */
	u64 xfer[NR_DIST]; /* ps to move a cache line */
	int lock_lines[NR_LOCK_CLASSES]; /* lines a holder pulls over */
	bool ticket; /* ticket lock instead of queued */
};

extern struct sim_machine sim_machine;

/* machine.c */
int sim_machine_parse(const cJSON *o, char *err);
cJSON *sim_machine_json(void);
int cpu_socket(int cpu);
int cpu_core(int cpu);
int cpu_node_of(int cpu);
int cpu_sibling(int cpu);
enum cpu_distance cpu_distance(int a, int b);

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

#endif
