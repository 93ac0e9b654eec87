// SPDX-License-Identifier: GPL-2.0
/*
 * zone->lock and lru_lock in virtual time: a FIFO queue like the kernel's
 * queued spinlock. A CPU finding the lock held joins the queue and spins;
 * the releaser hands it over after the time the lock's cache line takes
 * to travel between them (SMT sibling, same socket, other socket), and the
 * new holder then pulls the lines of the data the lock protects from where
 * the previous holder left them. The ticket-lock variant makes every
 * waiter re-read the line on each release, so a handoff takes longer the
 * more CPUs wait ("Non-scalable locks are dangerous", 2012).
 *
 * Only taking a lock needs the conservative order (sim_sync): a CPU takes
 * it when no other CPU can still arrive earlier, so arrivals are seen in
 * time order and the queue is FIFO. Releasing needs no order: an unlock
 * with nobody queued records when the lock became free, and a CPU that
 * arrives later at an earlier virtual time is one that was spinning then,
 * so it gets the lock at the release plus the handoff, exactly as if it
 * had queued. Not switching CPUs at every release halves the simulator's
 * context switches. The ticket lock keeps the ordered release: its
 * handoff depends on how many CPUs spin at that moment.
 */
#include <pcplab/mm.h>
#include "sim.h"

/* An unlocked lock whose lines are in no CPU's cache yet. */
void spin_lock_init(spinlock_t *lock, enum lock_class cls)
{
	lock->owner = NULL;
	lock->head = lock->tail = NULL;
	lock->nr_waiters = 0;
	lock->last_cpu = -1;
	lock->acquired = 0;
	lock->released = 0;
	lock->cls = cls;
}

static u64 line_xfer(int from, int to)
{
	if (from < 0 || to < 0)
		return 0;
	return sim_machine.xfer[cpu_distance(from, to)];
}

/* The cost kinds of the pages a holder of a lock of @cls handles. */
static const struct {
	int nr;
	enum cost_kind kind[3];
} page_kinds[NR_LOCK_CLASSES] = {
	[LOCK_ZONE] = { 3,
			{ COST_BUDDY_ALLOC_PAGE, COST_BUDDY_FREE_PAGE,
			  COST_BUDDY_FREE_UNMERGED } },
	[LOCK_LRU] = { 2, { COST_LRU_ADD_PAGE, COST_LRU_DEL_PAGE } },
};

/* Add @delta to the cost of every page a holder of @cls handles. */
static void charge_pages(struct vcpu *me, enum lock_class cls, s64 delta)
{
	for (int i = 0; i < page_kinds[cls].nr; i++)
		me->cost[page_kinds[cls].kind[i]] += delta;
}

/*
 * While a waiter spins on the lock word, it keeps pulling the lock's line,
 * and the data that share it (zone->free_area beside zone->lock, the LRU
 * lists beside lru_lock), away from the holder: every page the holder
 * handles then misses that line once more. A holder with nobody waiting
 * keeps it. The extra cost lasts until the unlock.
 *
 * Who spins during a hold is known only later in the simulation (CPUs
 * behind in virtual time have not arrived yet), so a holder that itself
 * had to wait (@waited) is taken to have a waiter behind it: under a
 * contended lock the queue is seldom empty. The spinner is a CPU of the
 * same node, at a core-to-core distance, unless one is queued already.
 */
static void steal_while_spun(struct vcpu *me, spinlock_t *lock, bool waited)
{
	enum cpu_distance d =
		lock->head ? cpu_distance(me->hot.id, lock->head->hot.id)
			   : DIST_SOCKET;
	u64 steal;

	if ((!lock->head && !waited) || !page_kinds[lock->cls].nr)
		return;
	steal = sim_machine.spin_steal[d];
	charge_pages(me, lock->cls, (s64)steal);
	me->stolen = steal;
}

/*
 * Take @lock at the running CPU's time, waiting in FIFO order if held;
 * @caller (the spin_lock() site) is charged with the wait.
 */
void spin_lock_caller(spinlock_t *lock, const struct lock_caller *caller)
{
	struct vcpu *me = sim_current();
	struct lock_stat *st = &this_cpu_stats()->lock[lock->cls];
	bool waited = true;

	if (unlikely(sim_perf_period))
		sim_perf_due(me, false);
	sim_sync();
	if (!lock->owner && lock->released > me->hot.clock) {
		/* it spun while the last holder (now ahead in time) held it */
		u64 got =
			lock->released + line_xfer(lock->last_cpu, me->hot.id);

		lock_stat_waited(st, caller, (got - me->hot.clock) / 1000);
		me->hot.clock = got;
		lock->owner = me;
	} else if (!lock->owner) {
		lock->owner = me;
		waited = false;
	} else {
		me->wait_from = me->hot.clock;
		me->next = NULL;
		if (lock->tail)
			lock->tail->next = me;
		else
			lock->head = me;
		lock->tail = me;
		lock->nr_waiters++;
		sim_block();
		/* the releaser made us the owner and set our clock */
		lock_stat_waited(st, caller,
				 (me->hot.clock - me->wait_from) / 1000);
	}
	if (unlikely(sim_perf_period))
		sim_perf_absorb(me);
	/*
	 * The critical section starts by pulling the protected data's lines
	 * from the last holder: part of the hold, as function_graph would
	 * time it.
	 */
	lock->acquired = me->hot.clock;
	steal_while_spun(me, lock, waited);
	if (lock->last_cpu >= 0) {
		u64 pull = sim_machine.lock_pull[lock->cls][cpu_distance(
			lock->last_cpu, me->hot.id)];

		me->hot.clock += pull;
		st->callers[caller->id].pull_ps += pull;
	}
	lock_stat_acquired(st, caller);
}

/* Release @lock at the running CPU's time, handing it to the next waiter. */
void spin_unlock(spinlock_t *lock)
{
	struct vcpu *me = sim_current(), *next;
	u64 handoff;

	if (sim_machine.ticket)
		sim_sync();
	if (unlikely(sim_perf_period))
		sim_perf_due(me, lock->cls == LOCK_ZONE);
	if (me->stolen) {
		charge_pages(me, lock->cls, -(s64)me->stolen);
		me->stolen = 0;
	}
	hist_record(&this_cpu_stats()->lock[lock->cls].hold_ns,
		    (me->hot.clock - lock->acquired) / 1000);
	lock->last_cpu = me->hot.id;
	next = lock->head;
	if (!next) {
		lock->owner = NULL;
		lock->released = me->hot.clock;
		return;
	}
	lock->head = next->next;
	if (!lock->head)
		lock->tail = NULL;
	handoff = line_xfer(me->hot.id, next->hot.id);
	if (sim_machine.ticket) /* the next in line is halfway down the reads */
		handoff += handoff * (u64)lock->nr_waiters / 2;
	lock->nr_waiters--;
	lock->owner = next;
	next->hot.clock = max(next->hot.clock, me->hot.clock + handoff);
	sim_wake(next);
}

/* Whether any CPU waits for @lock (spin_is_contended()). */
bool spin_is_contended(spinlock_t *lock)
{
	sim_sync();
	return lock->head != NULL;
}
