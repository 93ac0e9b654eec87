// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual CPUs as coroutines (Boost.Context fcontext) and their scheduler.
 *
 * Each CPU runs until it is about to touch shared state; there it calls
 * sim_sync(), which passes control to whichever runnable CPU has the
 * smallest clock (ties by CPU number, so runs are deterministic). A CPU
 * therefore only ever acts on shared state when no other CPU could still
 * act on it earlier in virtual time: a conservative discrete-event
 * simulation. CPUs waiting for a lock are not runnable; the releaser
 * wakes them with the time they get the lock.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <pcplab/mm.h>
#include "sim.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#define VCPU_STACK (128 * 1024)

/* -ln(1 - (i + 0.5) / 256) * 65536: mean 1 within 0.2% */
const u32 exp_quantiles[256] = {
#include "exp_quantiles.h"
};

/*
 * The engine's own context: not a CPU, but it can hold the clock at 0.
 * Its work costs nothing, from the start: building the memory map before
 * sim_init() makes list operations, whose CONFIG_DEBUG_LIST checks
 * cost() charges to it.
 */
static struct cpu_stats main_stats;
static const u64 no_cost[NR_COST_KINDS];
static struct vcpu main_vcpu = { .hot = { .id = -1,
					  .stats = &main_stats,
					  .prof = main_stats.prof_ps,
					  .cost = no_cost } };
struct vcpu_hot *current_vcpu = &main_vcpu.hot;

static struct vcpu *vcpus;
static int nr_vcpus;

/*
 * The run's pcp_batch_scale_max schedule in virtual time (ps, not
 * decreasing): each CPU passes its changes as its own clock reaches them
 * (sim_scale_max_scheduled(), from arch_pcp_batch_scale_max()).
 */
static u64 scale_max_at[MAX_SCHEDULE];
static int scale_max_value[MAX_SCHEDULE];
static int nr_scale_max;
u64 sim_scale_max_from = ~0ULL;

/*
 * The runnable CPUs, a binary min-heap on (clock, id). An entry is its
 * key, clock << 32 | id, compared as one 128-bit number: a CPU's clock
 * does not change while it waits in the heap, so a sift stays within the
 * heap array, and the comparisons compile to flag arithmetic instead of
 * branches that the host mispredicts half the time.
 */
typedef unsigned __int128 heap_key_t;

static heap_key_t *heap;
static int heap_len;

static inline heap_key_t heap_key(const struct vcpu *v)
{
	return (heap_key_t)v->hot.clock << 32 | (u32)v->hot.id;
}

static inline struct vcpu *heap_vcpu(heap_key_t key)
{
	return &vcpus[(u32)key];
}

static void sift_down(int i, heap_key_t key)
{
	for (;;) {
		int c = 2 * i + 1;

		if (c >= heap_len)
			break;
		c += c + 1 < heap_len && heap[c + 1] < heap[c];
		if (heap[c] >= key)
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = key;
}

static void heap_push(struct vcpu *v)
{
	heap_key_t key = heap_key(v);
	int i = heap_len++;

	while (i > 0) {
		int p = (i - 1) / 2;

		if (key >= heap[p])
			break;
		heap[i] = heap[p];
		i = p;
	}
	heap[i] = key;
}

static struct vcpu *heap_pop(void)
{
	struct vcpu *top;

	if (!heap_len)
		return NULL;
	top = heap_vcpu(heap[0]);
	if (--heap_len)
		sift_down(0, heap[heap_len]);
	return top;
}

static inline struct vcpu *cur(void)
{
	return container_of(current_vcpu, struct vcpu, hot);
}

/* The statistics of a CPU past its measured window go nowhere. */
void stats_detach(void)
{
	struct vcpu_hot *v = current_vcpu;

	if (v->id < 0)
		return;
	v->stats = cpu_stats_sink(v->id);
	v->prof = v->stats->prof_ps;
}

/* The CPU running now. */
struct vcpu *sim_current(void)
{
	return cur();
}

/* Lines of a waiting CPU's stack that its return to work reads first. */
#define RESUME_STACK_LINES 8

/*
 * Start fetching what the CPU likely to run after @next (the top of the
 * heap once @next has left it) reads first when it resumes: the registers
 * jump_fcontext() saved on its stack and the frames it returns through,
 * and its counters. Between two turns of one CPU the other CPUs' pages
 * evict all of it, and @next's turn hides the misses. A hint only: which
 * CPU runs is decided by the heap as before. Always inline: a function of
 * prefetches alone has no effect as far as GCC knows, and its call would
 * be dropped.
 */
static __always_inline void prefetch_successor(void)
{
	const struct vcpu *v;

	if (!heap_len)
		return;
	v = heap_vcpu(heap[0]);
	for (int i = 0; i < RESUME_STACK_LINES; i++)
		__builtin_prefetch((const char *)v->ctx + 64 * i);
	__builtin_prefetch(v->hot.stats);
}

static void switch_to(struct vcpu *next)
{
	struct vcpu *prev = cur();
	transfer_t t;

	prefetch_successor();
	current_vcpu = &next->hot;
#ifdef __SANITIZE_ADDRESS__
	void *fake;

	__sanitizer_start_switch_fiber(prev->done ? NULL : &fake, next->stack,
				       next->stack_size);
#endif
	t = jump_fcontext(next->ctx, prev);
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
	((struct vcpu *)t.data)->ctx = t.fctx;
	current_vcpu = &prev->hot;
}

/*
 * Called before every access to shared state: if another runnable CPU is
 * behind in virtual time, let it catch up first.
 */
void sim_sync(void)
{
	struct vcpu *me = cur(), *next;
	heap_key_t key;

	if (!heap_len)
		return;
	key = heap_key(me);
	if (heap[0] >= key)
		return;
	next = heap_vcpu(heap[0]);
	sift_down(0, key);
	switch_to(next);
}

/* Stop running until sim_wake(): the CPU waits in a lock queue. */
void sim_block(void)
{
	struct vcpu *next = heap_pop();

	BUG_ON(!next); /* every CPU waiting: a lock is never released */
	switch_to(next);
}

/* Make a waiting CPU runnable again (its clock already set). */
void sim_wake(struct vcpu *v)
{
	heap_push(v);
}

static void vcpu_entry(transfer_t t)
{
	struct vcpu *me;

	((struct vcpu *)t.data)->ctx = t.fctx;
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
	me = cur();
	me->fn(me->arg);
	me->done = true;
	switch_to(heap_len ? heap_pop() : &main_vcpu);
	BUG_ON(1); /* a finished CPU is never resumed */
}

/* Create @n virtual CPUs with clocks at zero, none runnable yet. */
int sim_init(int n)
{
	nr_vcpus = n;
	vcpus = calloc((size_t)n, sizeof(*vcpus));
	heap = calloc((size_t)n, sizeof(*heap));
	if (!vcpus || !heap)
		return -1;
	heap_len = 0;
	sim_scale_max_schedule(NULL, NULL, 0);
	main_vcpu.hot.stats = &main_stats;
	main_vcpu.hot.prof = main_stats.prof_ps;
	main_vcpu.hot.cost = no_cost;
	main_vcpu.hot.id = -1;
	for (int i = 0; i < n; i++) {
		vcpus[i].hot.id = i;
		vcpus[i].hot.stats = cpu_stats_of(i);
		vcpus[i].hot.prof = vcpus[i].hot.stats->prof_ps;
		vcpus[i].hot.cost = vcpus[i].cost;
	}
	current_vcpu = &main_vcpu.hot;
	return 0;
}

/*
 * Schedule pcp_batch_scale_max changes for every CPU: values[i] from
 * virtual time at_ps[i] (not decreasing); @n 0 cancels the schedule. Before
 * the first change, or without a schedule, CPUs read the knob as set.
 */
void sim_scale_max_schedule(const u64 *at_ps, const int *values, int n)
{
	BUG_ON(n > MAX_SCHEDULE);
	nr_scale_max = n;
	for (int i = 0; i < n; i++) {
		scale_max_at[i] = at_ps[i];
		scale_max_value[i] = values[i];
	}
	sim_scale_max_from = n ? at_ps[0] : ~0ULL;
	main_vcpu.scale_max_steps = 0;
	for (int i = 0; i < nr_vcpus; i++)
		vcpus[i].scale_max_steps = 0;
}

/*
 * The running CPU's clock has reached the schedule's first change: pass
 * every change due by its clock (a CPU's clock only moves forward) and
 * return the value the last one set.
 */
int sim_scale_max_scheduled(void)
{
	struct vcpu *v = cur();

	while (v->scale_max_steps < nr_scale_max &&
	       v->hot.clock >= scale_max_at[v->scale_max_steps])
		v->scale_max = scale_max_value[v->scale_max_steps++];
	return v->scale_max;
}

/* Free the CPUs and their stacks. */
void sim_exit(void)
{
	for (int i = 0; i < nr_vcpus; i++)
		if (vcpus[i].stack)
			munmap(vcpus[i].stack, vcpus[i].stack_size);
	free(vcpus);
	free(heap);
	vcpus = NULL;
	heap = NULL;
	nr_vcpus = 0;
	sim_scale_max_schedule(NULL, NULL, 0);
	current_vcpu = &main_vcpu.hot;
}

/* The virtual CPU @id. */
struct vcpu *sim_vcpu(int id)
{
	return &vcpus[id];
}

/* Give CPU @v a coroutine running fn(arg) and make it runnable. */
void sim_start(struct vcpu *v, void (*fn)(void *), void *arg)
{
	v->stack_size = VCPU_STACK;
	v->stack = mmap(NULL, v->stack_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	BUG_ON(v->stack == MAP_FAILED);
	mprotect(v->stack, 4096, PROT_NONE); /* guard page */
	v->fn = fn;
	v->arg = arg;
	v->ctx = make_fcontext((char *)v->stack + v->stack_size, v->stack_size,
			       vcpu_entry);
	heap_push(v);
}

/* Run every started CPU until all have finished. */
void sim_run(void)
{
	struct vcpu *first = heap_pop();

	if (first)
		switch_to(first);
}

/* Bytes of coroutine stack reserved (for the memory estimate). */
size_t sim_stack_bytes(void)
{
	return (size_t)nr_vcpus * VCPU_STACK;
}

/*
 * Make the engine's context act as CPU @cpu (single-threaded drivers such
 * as the property test: its clock is the CPU's, nothing is scheduled).
 */
void arch_set_cpu(int cpu)
{
	if (cpu >= 0 && !vcpus)
		BUG_ON(sim_init(nr_cpu_ids));
	current_vcpu = cpu < 0 ? &main_vcpu.hot : &vcpus[cpu].hot;
}

/*
 * Before any profile is read: a free, flat machine (one socket of single-
 * threaded cores, no costs), so single-threaded drivers such as the
 * property test run the model with nothing charged.
 */
void arch_init(void)
{
	memset(&sim_machine, 0, sizeof(sim_machine));
	sim_machine.sockets = sim_machine.numa_nodes = sim_machine.smt = 1;
	sim_machine.cores_per_socket = sim_machine.nr_cpus = NR_CPUS;
	sim_machine.ghz = 1;
	sim_machine.smt_factor = 1;
	sim_topology_init();
}
