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

/* Take @lock at the running CPU's time, waiting in FIFO order if held. */
void spin_lock(spinlock_t *lock)
{
	struct vcpu *me = sim_current();
	struct lock_stat *st = &this_cpu_stats()->lock[lock->cls];

	sim_sync();
	if (!lock->owner && lock->released > me->hot.clock) {
		/* it spun while the last holder (now ahead in time) held it */
		u64 got =
			lock->released + line_xfer(lock->last_cpu, me->hot.id);

		st->wait_ns += (got - me->hot.clock) / 1000;
		st->contended++;
		me->hot.clock = got;
		lock->owner = me;
	} else if (!lock->owner) {
		lock->owner = me;
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
		st->wait_ns += (me->hot.clock - me->wait_from) / 1000;
		st->contended++;
	}
	/*
	 * The critical section starts by pulling the protected data's lines
	 * from the last holder: part of the hold, as function_graph would
	 * time it.
	 */
	lock->acquired = me->hot.clock;
	me->hot.clock += (u64)sim_machine.lock_lines[lock->cls] *
			 line_xfer(lock->last_cpu, me->hot.id);
	st->acquisitions++;
}

/* Release @lock at the running CPU's time, handing it to the next waiter. */
void spin_unlock(spinlock_t *lock)
{
	struct vcpu *me = sim_current(), *next;
	u64 handoff;

	if (sim_machine.ticket)
		sim_sync();
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
