// SPDX-License-Identifier: GPL-2.0
/*
 * The workload registry and the helpers every workload shares: faulting
 * pages in with the run's stop flag, op counting and periodic work.
 */
#include <errno.h>
#include <string.h>

#include <pcplab/workload.h>

static const struct workload *const workloads[] = {
	&page_fault1_workload,
	&mmap_fill_workload,
};

/* The workload called @name, or NULL. */
const struct workload *find_workload(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(workloads); i++)
		if (!strcmp(workloads[i]->name, name))
			return workloads[i];
	return NULL;
}

/* The known workload names, for error messages. */
const char *workload_names(void)
{
	return "page_fault1, mmap_fill";
}

/*
 * Per-task periodic work, every few hundred faults: the vmstat worker's
 * decay of pcp->high once per vm.stat_interval (it runs on each CPU, so
 * the task runs it on its own CPU), and the reset of the task's statistics
 * when the engine starts measuring.
 */
void task_tick(struct task *t)
{
	u64 now = now_ns();
	int epoch = READ_ONCE(*t->epoch);

	if (epoch != t->seen_epoch) {
		t->seen_epoch = epoch;
		memset(this_cpu_stats(), 0, sizeof(struct cpu_stats));
	}
	if (now >= t->next_vmstat_ns) {
		refresh_cpu_vm_stats(true);
		t->next_vmstat_ns =
			now + (u64)pcp_policy.stat_interval_ms * 1000000ULL;
	}
}

/*
 * Fault in @nr pages, writing @bytes of each; every page is one op. Stops
 * early when the run ends. Returns 0 or -ENOMEM.
 */
int fault_in(struct task *t, unsigned long nr, size_t bytes)
{
	for (unsigned long i = 0; i < nr; i++) {
		if (!(i & 255)) {
			if (task_should_stop(t))
				return 0;
			task_tick(t);
		}
		if (do_anonymous_page(&t->mm, bytes))
			return -ENOMEM;
		WRITE_ONCE(t->ops, t->ops + 1);
		this_cpu_stats()->ops++;
	}
	return 0;
}
