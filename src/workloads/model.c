// SPDX-License-Identifier: GPL-2.0
/*
 * What the model halves of the workloads share (model_workload.h): their
 * registry, faulting pages in with the run's stop flag, op counting,
 * periodic work and the cross-CPU free partners.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/model_workload.h>

extern const struct model_workload *const __start_pcplab_model_workloads[];
extern const struct model_workload *const __stop_pcplab_model_workloads[];

/* The model half of the workload called @name, or NULL if it has none. */
const struct model_workload *find_model_workload(const char *name)
{
	const struct model_workload *const *pos;

	for_each_registry_entry (pos, pcplab_model_workloads)
		if (!strcmp((*pos)->desc->name, name))
			return *pos;
	return NULL;
}

/* Note this CPU's totals at the start of a scale-max schedule step. */
static void step_mark(struct task *t, struct step_mark *m)
{
	static const int lat[2] = { LAT_RMQUEUE_BULK, LAT_FREE_PCPPAGES_BULK };
	const struct cpu_stats *st = cpu_stats_of(t->cpu);

	for (int i = 0; i < 2; i++) {
		m->count[i] = st->latency[lat[i]].count;
		m->sum_ns[i] = st->latency[lat[i]].sum;
	}
}

/*
 * Per-task periodic work, every few hundred faults: the vmstat worker's
 * decay of pcp->high once per vm.stat_interval (it runs on each CPU, so
 * the task runs it on its own CPU), the reset of the task's statistics
 * when measuring starts, the marks of the scale-max schedule's steps (so
 * the result can split each step's calls, at the same granularity as the
 * start of measuring), per-second op samples, and the deadline.
 */
void task_tick(struct task *t)
{
	u64 now = now_ns();

	if (!t->measuring && now >= READ_ONCE(t->measure_ns)) {
		t->measuring = true;
		t->ops_at_measure = t->ops_at_tick = t->ops;
		stats_window_start(this_cpu_stats(), now);
	}
	while (t->measuring && t->steps_passed < t->nr_steps &&
	       now >= READ_ONCE(t->measure_ns) + t->step_ns[t->steps_passed])
		step_mark(t, &t->step_marks[t->steps_passed++]);
	if (t->measuring && t->samples) {
		u64 sec = (now - t->measure_ns) / 1000000000ULL;

		if (sec < (u64)t->nr_samples)
			t->samples[sec] += t->ops - t->ops_at_tick;
		t->ops_at_tick = t->ops;
	}
	if (now >= t->deadline_ns && !t->stopped) {
		t->stopped = 1;
		t->ops_at_deadline = t->ops;
	}
	if (now >= t->next_vmstat_ns) {
		refresh_cpu_vm_stats(true);
		t->next_vmstat_ns =
			now + (u64)pcp_policy.stat_interval_ms * 1000000ULL;
	}
}

/*
 * Close @t's measured window: its CPU's time in it (the denominator of the
 * lock waits and of the profile it counted, which may run past the deadline
 * to the next tick) goes with its statistics, and later ones go nowhere.
 */
void task_stats_detach(struct task *t)
{
	stats_window_end(this_cpu_stats(), now_ns());
	stats_detach();
}

/*
 * The pages of this iteration: the mapping size, except that a task's
 * first iteration maps a random part of it unless the tasks start in step
 * (task_start), so tasks run at staggered phases from the start. A
 * choice, not will-it-scale's: its tasks leave one barrier together, and
 * the fault's own jitter (work_cv) averages out over an iteration, so
 * tasks started together stay in step for seconds and double the
 * zone->lock share of the 2018 servers at batch 31 (docs/fidelity.md,
 * "Tasks that start in step").
 */
unsigned long iteration_pages(struct task *t)
{
	if (t->iterations++ || t->start_in_step)
		return t->size_pages;
	return 1 + prandom_below(&t->rnd, t->size_pages);
}

/*
 * Fault in @nr pages of @kind, writing @bytes of each; every page is a page
 * op. Stops early when the run ends. Returns 0 or -ENOMEM.
 */
int fault_in(struct task *t, unsigned long nr, enum fault_kind kind,
	     size_t bytes)
{
	for (unsigned long i = 0; i < nr; i++) {
		if (!(i & 255)) {
			task_tick(t);
			if (task_should_stop(t)) {
				task_stats_detach(t);
				return 0;
			}
		}
		if (handle_mm_fault(&t->mm, kind, i, bytes))
			return -ENOMEM;
		WRITE_ONCE(t->ops, t->ops + 1);
		this_cpu_stats()->ops++;
	}
	return 0;
}

/* How long a CPU waits before it looks at its mailbox again. */
#define CROSS_FREE_POLL_NS 20000

/*
 * Put the iteration's pages in the mailbox for the partner CPU to free,
 * once it has taken the previous ones (the allocating side of the pattern
 * of allocator purge threads).
 */
static void cross_free_handoff(struct task *t)
{
	struct cross_free_mailbox *box = t->cross_free;

	for (;;) {
		spin_lock(&box->lock);
		if (!box->nr || task_should_stop(t))
			break;
		spin_unlock(&box->lock);
		delay_ns(CROSS_FREE_POLL_NS);
	}
	if (!box->nr) {
		struct page **swap = box->pages;

		cost(COST_UNMAP_PAGE, t->mm.mapped);
		lru_add_drain(&t->mm.lru_add);
		box->pages = t->mm.pages;
		box->nr = t->mm.nr;
		t->mm.pages = swap;
		t->mm.nr = t->mm.mapped = 0;
	}
	spin_unlock(&box->lock);
}

/* munmap the iteration's mapping, or pass its pages to the partner CPU. */
void iteration_unmap(struct task *t)
{
	if (t->cross_free)
		cross_free_handoff(t);
	unmap_all(&t->mm);
}

/* Take what @box holds (under its lock); returns how many pages. */
static unsigned long
cross_free_take(struct task *t, struct cross_free_mailbox *box, int *closed)
{
	struct page **swap;
	unsigned long nr;

	spin_lock(&box->lock);
	nr = box->nr;
	*closed = box->closed;
	if (nr) {
		swap = box->pages;
		box->pages = t->mm.pages;
		box->nr = 0;
		t->mm.pages = swap;
	}
	spin_unlock(&box->lock);
	return nr;
}

/*
 * The freeing CPU's iteration: look at its group's mailboxes in turn, take
 * what the next one holds and free it here (release_pages: off the LRU,
 * into this CPU's pcp), or wait a little if it is empty.
 */
int cross_free_consumer_iteration(struct task *t)
{
	struct cross_free_mailbox *box = &t->cross_free[t->cross_free_next];
	unsigned long nr;
	int closed;

	task_tick(t);
	t->cross_free_next = (t->cross_free_next + 1) % t->nr_cross_free;
	nr = cross_free_take(t, box, &closed);
	if (nr)
		release_pages(t->mm.pages, nr);
	else if (!t->cross_free_next) /* every box looked at: wait */
		delay_ns(CROSS_FREE_POLL_NS);
	return 0;
}

/*
 * Group the tasks for cross-CPU free: in each group of @ratio + 1, tasks
 * 0..@ratio-1 allocate, each handing its pages to a mailbox of its own,
 * and the last task frees what all of them hold (jemalloc's background
 * purge threads serve many allocating threads). Returns 0 or -ENOMEM.
 */
int cross_free_setup(struct task *tasks, int nr, unsigned long cap, int ratio)
{
	for (int i = 0; i + ratio < nr; i += ratio + 1) {
		struct cross_free_mailbox *boxes =
			calloc((size_t)ratio, sizeof(*boxes));

		if (!boxes)
			return -ENOMEM;
		for (int j = 0; j < ratio; j++) {
			boxes[j].pages =
				calloc(cap ? cap : 1, sizeof(*boxes[j].pages));
			if (!boxes[j].pages)
				return -ENOMEM;
			spin_lock_init(&boxes[j].lock, LOCK_CROSS_FREE);
			tasks[i + j].cross_free = &boxes[j];
		}
		tasks[i + ratio].cross_free = boxes;
		tasks[i + ratio].nr_cross_free = ratio;
		tasks[i + ratio].cross_free_consumer = true;
	}
	return 0;
}

/* Free the mailboxes of cross_free_setup() (empty by now). */
void cross_free_teardown(struct task *tasks, int nr)
{
	for (int i = 0; i < nr; i++) {
		struct cross_free_mailbox *boxes = tasks[i].cross_free;

		if (!tasks[i].cross_free_consumer)
			continue;
		for (int j = 0; j < tasks[i].nr_cross_free; j++) {
			BUG_ON(boxes[j].nr);
			free(boxes[j].pages);
		}
		free(boxes);
	}
	for (int i = 0; i < nr; i++)
		tasks[i].cross_free = NULL;
}

/* One iteration of @t: the workload's, or the freeing partner's loop. */
int task_iteration(const struct model_workload *wl, struct task *t)
{
	if (t->cross_free_consumer)
		return cross_free_consumer_iteration(t);
	return wl->iteration(t);
}

/*
 * The end of a task's run, on its own CPU and out of the measured window:
 * unmap what is mapped and truncate its file. An allocating partner closes
 * its mailbox; a freeing one frees what is left in it once it is closed.
 */
void task_exit(struct task *t)
{
	task_stats_detach(t);
	if (t->cross_free && !t->cross_free_consumer) {
		spin_lock(&t->cross_free->lock);
		t->cross_free->closed = 1;
		spin_unlock(&t->cross_free->lock);
	}
	for (int j = 0; t->cross_free_consumer && j < t->nr_cross_free; j++) {
		for (;;) {
			int closed;
			unsigned long nr =
				cross_free_take(t, &t->cross_free[j], &closed);

			if (nr)
				release_pages(t->mm.pages, nr);
			if (closed && !nr)
				break;
			if (!nr)
				delay_ns(CROSS_FREE_POLL_NS);
		}
	}
	unmap_all(&t->mm);
	truncate_file(&t->mm);
}
