// SPDX-License-Identifier: GPL-2.0
/*
 * The simulated machine: its topology, and every cost the simulator
 * charges, derived from the hardware description and a few global
 * constants (python/pcplab/machines/constants.toml, fitted on
 * shared/reference only) so that a machine never seen needs only its
 * description. A profile may override any derived cost.
 *
 * Derivation (docs/machines.md):
 *   work done by one core scales with its clock: cost = cycles / GHz;
 *   clear_page() moves PAGE_SIZE bytes at clear_bytes_per_cycle;
 *   copy_page() reads and writes: twice a clear;
 *   a task whose SMT sibling is busy runs every cost smt_factor slower;
 *   a cache line moves between SMT siblings, within a socket (through the
 *   LLC: the ring or mesh is longer the more cores it joins, about as the
 *   square root of their number), or across sockets (the interconnect;
 *   beyond two sockets a line may need more than one hop:
 *   remote_hop_factor).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <pcplab/mm.h>
#include "sim.h"

struct sim_machine sim_machine;

/* The global constants a profile needs, and the cost kinds they feed. */
static const char *const constant_names[] = {
	"fault_base_cycles",
	"clear_bytes_per_cycle",
	"pcp_alloc_cycles",
	"pcp_free_cycles",
	"zone_alloc_page_cycles",
	"zone_free_page_cycles",
	"lru_page_cycles",
	"unmap_page_cycles",
	"mmap_cycles",
	"smt_factor",
	"xfer_smt_ns",
	"xfer_socket_base_ns",
	"xfer_socket_sqrt_core_ns",
	"xfer_remote_ns",
	"remote_hop_factor",
	"zone_lock_lines",
	"lru_lock_lines",
	"work_cv",
};
enum {
	K_FAULT,
	K_CLEAR,
	K_PCP_ALLOC,
	K_PCP_FREE,
	K_ZONE_ALLOC,
	K_ZONE_FREE,
	K_LRU,
	K_UNMAP,
	K_MMAP,
	K_SMT,
	K_XFER_SMT,
	K_XFER_SOCKET,
	K_XFER_SOCKET_SQRT,
	K_XFER_REMOTE,
	K_HOP,
	K_ZONE_LINES,
	K_LRU_LINES,
	K_WORK_CV,
	NR_CONSTANTS
};

/* Profile keys of per-kind overrides, in ns (see enum cost_kind). */
static const char *const cost_names[NR_COST_KINDS] = {
	"fault_base_ns",      "clear_page_ns",	 "copy_page_ns",
	"pcp_alloc_ns",	      "pcp_free_ns",	 "buddy_alloc_page_ns",
	"buddy_free_page_ns", "lru_add_page_ns", "lru_del_page_ns",
	"unmap_page_ns",      "mmap_ns",
};

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

static int parse_topology(const cJSON *t, char *err)
{
	double v[6];
	static const char *const keys[] = {
		"sockets", "numa_nodes", "cores_per_socket",
		"smt",	   "ghz",	 "memory_gb"
	};
	/* memory_gb: what the model's memory map reaches (memmap.c) */
	const double hi[] = {
		64, 64, 1024,
		8,  10, (double)(sparse_max_pages() >> (30 - PAGE_SHIFT))
	};
	struct sim_machine *m = &sim_machine;

	if (!cJSON_IsObject(t))
		return fail(err, "needs a table", "topology");
	for (int i = 0; i < 6; i++)
		if (get_number(t, keys[i], i < 4 ? 1 : 0.1, hi[i], &v[i], err))
			return -1;
	m->sockets = (int)v[0];
	m->numa_nodes = (int)v[1];
	m->cores_per_socket = (int)v[2];
	m->smt = (int)v[3];
	m->ghz = v[4];
	m->memory_gb = v[5];
	m->nr_cpus = m->sockets * m->cores_per_socket * m->smt;
	if (m->nr_cpus > NR_CPUS)
		return fail(err, "has more CPUs than the simulator's 1024 in",
			    "topology");
	if (m->numa_nodes % m->sockets && m->sockets % m->numa_nodes)
		return fail(
			err,
			"needs numa_nodes a multiple or divisor of sockets in",
			"topology");
	if (m->cores_per_socket * m->sockets % m->numa_nodes)
		return fail(err, "cannot split cores evenly over numa_nodes in",
			    "topology");
	return 0;
}

static u64 cycles_ps(double cycles)
{
	return (u64)llround(cycles * 1000.0 / sim_machine.ghz);
}

static u64 ns_ps(double ns)
{
	return (u64)llround(ns * 1000.0);
}

static void derive_costs(const double *k)
{
	struct sim_machine *m = &sim_machine;
	double clear = (double)PAGE_SIZE / k[K_CLEAR];
	double hop = m->sockets > 2 ? k[K_HOP] : 1.0;

	m->cost[COST_FAULT_BASE] = cycles_ps(k[K_FAULT]);
	m->cost[COST_CLEAR_PAGE] = cycles_ps(clear);
	m->cost[COST_COPY_PAGE] = cycles_ps(2 * clear);
	m->cost[COST_PCP_ALLOC] = cycles_ps(k[K_PCP_ALLOC]);
	m->cost[COST_PCP_FREE] = cycles_ps(k[K_PCP_FREE]);
	m->cost[COST_BUDDY_ALLOC_PAGE] = cycles_ps(k[K_ZONE_ALLOC]);
	m->cost[COST_BUDDY_FREE_PAGE] = cycles_ps(k[K_ZONE_FREE]);
	m->cost[COST_LRU_ADD_PAGE] = cycles_ps(k[K_LRU]);
	m->cost[COST_LRU_DEL_PAGE] = cycles_ps(k[K_LRU]);
	m->cost[COST_UNMAP_PAGE] = cycles_ps(k[K_UNMAP]);
	m->cost[COST_MMAP] = cycles_ps(k[K_MMAP]);
	m->smt_factor = k[K_SMT];
	m->work_cv = min(k[K_WORK_CV], 1.0);
	m->xfer[DIST_SAME] = 0;
	m->xfer[DIST_SMT] = ns_ps(k[K_XFER_SMT]);
	m->xfer[DIST_SOCKET] = ns_ps(k[K_XFER_SOCKET] +
				     k[K_XFER_SOCKET_SQRT] *
					     sqrt((double)m->cores_per_socket));
	m->xfer[DIST_REMOTE] = ns_ps(k[K_XFER_REMOTE] * hop);
	m->lock_lines[LOCK_ZONE] = (int)k[K_ZONE_LINES];
	m->lock_lines[LOCK_LRU] = (int)k[K_LRU_LINES];
	m->lock_lines[LOCK_PCP] = 0;
}

static int apply_overrides(const cJSON *costs, char *err)
{
	const cJSON *item;

	if (!costs || cJSON_IsNull(costs))
		return 0;
	if (!cJSON_IsObject(costs))
		return fail(err, "needs a table", "costs");
	cJSON_ArrayForEach (item, costs) {
		int kind;

		for (kind = 0; kind < NR_COST_KINDS; kind++)
			if (!strcmp(item->string, cost_names[kind]))
				break;
		if (kind == NR_COST_KINDS)
			return fail(err, "has an unknown cost", item->string);
		if (!cJSON_IsNumber(item) || item->valuedouble < 0)
			return fail(err, "needs a number >= 0 for",
				    item->string);
		sim_machine.cost[kind] = ns_ps(item->valuedouble);
	}
	return 0;
}

/* Read a machine profile (JSON of the TOML profile + constants). */
int sim_machine_parse(const cJSON *o, char *err)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
	const cJSON *constants =
		cJSON_GetObjectItemCaseSensitive(o, "constants");
	const cJSON *lock = cJSON_GetObjectItemCaseSensitive(o, "lock");
	double k[NR_CONSTANTS];

	_Static_assert(ARRAY_SIZE(constant_names) == NR_CONSTANTS,
		       "a name for every constant");

	memset(&sim_machine, 0, sizeof(sim_machine));
	if (!cJSON_IsObject(o))
		return fail(err, "must be a table, got", "machine");
	snprintf(sim_machine.name, sizeof(sim_machine.name), "%s",
		 cJSON_IsString(name) ? name->valuestring : "unnamed");
	if (parse_topology(cJSON_GetObjectItemCaseSensitive(o, "topology"),
			   err))
		return -1;
	if (!cJSON_IsObject(constants))
		return fail(err, "needs a table", "constants");
	for (int i = 0; i < NR_CONSTANTS; i++)
		if (get_number(constants, constant_names[i], 0, 1e9, &k[i],
			       err))
			return -1;
	if (k[K_CLEAR] <= 0 || k[K_SMT] < 1)
		return fail(
			err,
			"needs clear_bytes_per_cycle > 0 and smt_factor >= 1:",
			"constants");
	derive_costs(k);
	if (apply_overrides(cJSON_GetObjectItemCaseSensitive(o, "costs"), err))
		return -1;
	if (lock && !cJSON_IsNull(lock)) {
		if (!cJSON_IsString(lock) ||
		    (strcmp(lock->valuestring, "queued") &&
		     strcmp(lock->valuestring, "ticket")))
			return fail(err, "takes lock = queued or ticket, not",
				    cJSON_IsString(lock) ? lock->valuestring
							 : "?");
		sim_machine.ticket = !strcmp(lock->valuestring, "ticket");
	}
	return 0;
}

/* The machine as the result reports it: topology and derived costs. */
cJSON *sim_machine_json(void)
{
	struct sim_machine *m = &sim_machine;
	cJSON *o = cJSON_CreateObject(), *t, *c;
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
	c = cJSON_AddObjectToObject(o, "costs");
	for (int i = 0; i < NR_COST_KINDS; i++)
		cJSON_AddNumberToObject(c, cost_names[i],
					(double)m->cost[i] / 1000.0);
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

/* How far apart two CPUs are, for cache-line transfers. */
enum cpu_distance cpu_distance(int a, int b)
{
	if (a == b)
		return DIST_SAME;
	if (cpu_core(a) == cpu_core(b))
		return DIST_SMT;
	if (cpu_socket(a) == cpu_socket(b))
		return DIST_SOCKET;
	return DIST_REMOTE;
}
