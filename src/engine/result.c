// SPDX-License-Identifier: GPL-2.0
/*
 * The result document every engine writes (docs/engine-protocol.md): merged
 * per-CPU statistics turned into throughput, contention, latency and
 * lock-hold summaries, with bcc-style log2 histograms.
 */
#include <string.h>

#include <pcplab/engine.h>
#include <pcplab/hostinfo.h>
#include <pcplab/model_workload.h>

/*
 * The result's name of each lock class. "xfree_lock" is LOCK_CROSS_FREE's
 * (the cross-free mailbox): a key of the engine protocol, kept as it was.
 */
static const char *const lock_names[NR_LOCK_CLASSES] = {
	"zone_lock",  "lru_lock",  "pcp_lock",	      "mmap_lock",
	"xfree_lock", "test_lock", "pcp_remote_lock",
};

/*
 * Add @from's acquisitions, waits and hold times into @to's. Callers new to
 * @to take the next places in its first-wait order, in the order they
 * first waited on @from's CPU: the merged order is that of CPU 0, then of
 * what CPU 1 adds, and so on.
 */
static void merge_lock_stat(struct lock_stat *to, const struct lock_stat *from)
{
	for (int rank = 1; rank <= from->nr_waited; rank++)
		for (int id = 0; id < NR_LOCK_CALLERS; id++)
			if (from->first_wait[id] == rank && !to->first_wait[id])
				to->first_wait[id] = (u8)++to->nr_waited;
	for (int id = 0; id < NR_LOCK_CALLERS; id++) {
		struct lock_caller_stat *t = &to->callers[id];
		const struct lock_caller_stat *c = &from->callers[id];

		t->acquisitions += c->acquisitions;
		t->contended += c->contended;
		t->wait_ns += c->wait_ns;
		t->max_wait_ns = max(t->max_wait_ns, c->max_wait_ns);
		t->pull_ps += c->pull_ps;
	}
	hist_merge(&to->hold_ns, &from->hold_ns);
}

/* Sum every CPU's statistics into @total. */
void merge_cpu_stats(struct cpu_stats *total)
{
	memset(total, 0, sizeof(*total));
	for (int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		const struct cpu_stats *s = cpu_stats_of(cpu);

		for (int i = 0; i < NR_PCP_STAT_ITEMS; i++)
			total->events[i] += s->events[i];
		for (int i = 0; i < NR_LOCK_CLASSES; i++)
			merge_lock_stat(&total->lock[i], &s->lock[i]);
		for (int i = 0; i < NR_LATENCY_ITEMS; i++)
			hist_merge(&total->latency[i], &s->latency[i]);
		for (int i = 0; i < NR_PROF_TERMS; i++)
			total->prof_ps[i] += s->prof_ps[i];
		total->ops += s->ops;
		total->window_ns += s->window_ns;
	}
}

/*
 * Split the measured calls of rmqueue_bulk and free_pcppages_bulk by the
 * steps of the scale-max schedule, from the marks each task took at its
 * ticks (workload.c), after the run and before anything else runs on the
 * CPUs. A step a task never reached (past its deadline) begins at its
 * final totals; the rows add up to latency_ns.
 */
void collect_steps(const struct spec *s, const struct task *tasks,
		   struct run_result *r)
{
	int n = s->nr_schedule;
	/* a row for the spec's own scale_max if the schedule starts later */
	int first = n && s->schedule_ns[0] > 0;

	memset(r->steps, 0, sizeof(r->steps));
	r->nr_steps = n ? n + first : 0;
	if (first) {
		r->steps[0].t_s = 0;
		r->steps[0].scale_max = s->scale_max;
	}
	for (int j = 0; j < n; j++) {
		r->steps[first + j].t_s = s->schedule[j].t_s;
		r->steps[first + j].scale_max = s->schedule[j].value;
	}
	for (int i = 0; i < s->tasks && n; i++) {
		const struct task *t = &tasks[i];
		const struct cpu_stats *st = cpu_stats_of(t->cpu);
		const struct hist *h[2] = {
			&st->latency[LAT_RMQUEUE_BULK],
			&st->latency[LAT_FREE_PCPPAGES_BULK]
		};

		for (int k = 0; k < 2; k++) {
			/* the totals where the row begins: zero at measuring */
			u64 count = 0, sum = 0;

			for (int row = 1; row <= r->nr_steps; row++) {
				int j = row - first; /* the mark ending it */
				u64 c = h[k]->count, ns = h[k]->sum;

				if (j < n && j < t->steps_passed) {
					c = t->step_marks[j].count[k];
					ns = t->step_marks[j].sum_ns[k];
				}
				r->steps[row - 1].count[k] += c - count;
				r->steps[row - 1].sum_ns[k] += ns - sum;
				count = c;
				sum = ns;
			}
		}
	}
}

/* {count, total, avg} of one side of a schedule step. */
static cJSON *step_calls_json(const struct step_result *st, int k)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "count", (double)st->count[k]);
	cJSON_AddNumberToObject(o, "total", (double)st->sum_ns[k]);
	cJSON_AddNumberToObject(
		o, "avg",
		st->count[k] ? (double)(st->sum_ns[k] / st->count[k]) : 0);
	return o;
}

/* {count, total, avg, p50, p99, max, log2_hist} of a latency histogram. */
static cJSON *latency_json(const struct hist *h)
{
	return hist_json(h, false);
}

/* The pagesets as configured: one entry per populated zone. */
cJSON *pagesets_to_json(void)
{
	cJSON *list = cJSON_CreateArray();

	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct zone *zone;

		for_each_populated_zone_of (NODE_DATA(nid), zone) {
			cJSON *z = cJSON_CreateObject();

			cJSON_AddNumberToObject(z, "node", nid);
			cJSON_AddStringToObject(z, "zone", zone->name);
			cJSON_AddNumberToObject(z, "managed_pages",
						(double)zone->managed_pages);
			cJSON_AddNumberToObject(z, "low_wmark",
						(double)low_wmark_pages(zone));
			cJSON_AddNumberToObject(z, "batch",
						zone->pageset_batch);
			cJSON_AddNumberToObject(z, "high",
						zone->pageset_high_min);
			cJSON_AddNumberToObject(z, "high_min",
						zone->pageset_high_min);
			cJSON_AddNumberToObject(z, "high_max",
						zone->pageset_high_max);
			cJSON_AddItemToArray(list, z);
		}
	}
	return list;
}

static cJSON *invariants_json(const struct invariant_report *a,
			      const struct invariant_report *b)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *v = cJSON_CreateArray();
	const struct invariant_report *reps[] = { a, b };

	cJSON_AddBoolToObject(o, "checked", a->checked && b->checked);
	cJSON_AddBoolToObject(o, "pages_conserved",
			      a->pages_conserved && b->pages_conserved);
	for (int k = 0; k < 2; k++)
		for (unsigned long i = 0;
		     i < reps[k]->nr_violations && i < MAX_VIOLATIONS; i++)
			cJSON_AddItemToArray(
				v, cJSON_CreateString(reps[k]->violations[i]));
	cJSON_AddItemToObject(o, "violations", v);
	cJSON_AddNumberToObject(o, "managed_pages", (double)b->managed_pages);
	cJSON_AddNumberToObject(o, "pcp_pages_before_drain",
				(double)a->pcp_pages);
	return o;
}

static double pct(u64 part, double whole)
{
	return whole > 0 ? 100.0 * (double)part / whole : 0;
}

/*
 * A lock's waits by caller, most total wait first: the rows of
 * `perf lock contention` (contended, total wait, max wait, avg wait).
 */
static cJSON *callers_json(const struct lock_stat *st)
{
	int order[NR_LOCK_CALLERS]; /* caller ids, most waited first */
	cJSON *list = cJSON_CreateArray();
	int n = 0;

	/* insertion in first-wait order: equal waits keep that order */
	for (int rank = 1; rank <= st->nr_waited; rank++) {
		for (int id = 0; id < NR_LOCK_CALLERS; id++) {
			u64 wait_ns = st->callers[id].wait_ns;
			int j;

			if (st->first_wait[id] != rank)
				continue;
			for (j = n++;
			     j > 0 &&
			     st->callers[order[j - 1]].wait_ns < wait_ns;
			     j--)
				order[j] = order[j - 1];
			order[j] = id;
		}
	}
	for (int i = 0; i < n; i++) {
		const struct lock_caller_stat *caller = &st->callers[order[i]];
		cJSON *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "caller",
					lock_caller_name(order[i]));
		cJSON_AddNumberToObject(c, "contended",
					(double)caller->contended);
		cJSON_AddNumberToObject(c, "total_wait_ns",
					(double)caller->wait_ns);
		cJSON_AddNumberToObject(c, "max_wait_ns",
					(double)caller->max_wait_ns);
		cJSON_AddNumberToObject(c, "avg_wait_ns",
					(double)caller->wait_ns /
						(double)caller->contended);
		cJSON_AddItemToArray(list, c);
	}
	return list;
}

static void add_contention(cJSON *root, const struct spec *s,
			   const struct run_result *r)
{
	const struct cpu_stats *t = &r->total;
	/* over the CPU time the waits were counted in (the profile's too) */
	double cpu_ns = (double)t->window_ns;
	cJSON *c = cJSON_AddObjectToObject(root, "contention");
	cJSON *locks = cJSON_AddObjectToObject(root, "locks");
	struct lock_caller_stat sum[NR_LOCK_CLASSES];

	for (int i = 0; i < NR_LOCK_CLASSES; i++)
		sum[i] = lock_stat_totals(&t->lock[i]);
	cJSON_AddNumberToObject(c, "zone_lock_pct",
				pct(sum[LOCK_ZONE].wait_ns, cpu_ns));
	cJSON_AddNumberToObject(c, "lru_lock_pct",
				pct(sum[LOCK_LRU].wait_ns, cpu_ns));
	cJSON_AddNumberToObject(c, "mmap_lock_pct",
				pct(sum[LOCK_MMAP].wait_ns, cpu_ns));
	cJSON_AddNumberToObject(
		c, "total_pct",
		pct(sum[LOCK_ZONE].wait_ns + sum[LOCK_LRU].wait_ns +
			    sum[LOCK_PCP].wait_ns + sum[LOCK_MMAP].wait_ns,
		    cpu_ns));
	for (int i = 0; i < NR_LOCK_CLASSES; i++) {
		cJSON *l = cJSON_AddObjectToObject(locks, lock_names[i]);

		cJSON_AddNumberToObject(l, "acquisitions",
					(double)sum[i].acquisitions);
		cJSON_AddNumberToObject(l, "contended",
					(double)sum[i].contended);
		cJSON_AddNumberToObject(l, "wait_ns", (double)sum[i].wait_ns);
		cJSON_AddItemToObject(l, "callers", callers_json(&t->lock[i]));
	}
}

static void add_pcp(cJSON *root, const struct cpu_stats *t)
{
	cJSON *p = cJSON_AddObjectToObject(root, "pcp");
	cJSON *v = cJSON_AddObjectToObject(root, "vmstat");

	cJSON_AddNumberToObject(p, "refills", (double)t->events[PCP_REFILLS]);
	cJSON_AddNumberToObject(p, "drains", (double)t->events[PCP_DRAINS]);
	cJSON_AddNumberToObject(p, "pages_refilled",
				(double)t->events[PCP_PAGES_REFILLED]);
	cJSON_AddNumberToObject(p, "pages_drained",
				(double)t->events[PCP_PAGES_DRAINED]);
	cJSON_AddNumberToObject(p, "trylock_failures",
				(double)t->events[PCP_TRYLOCK_FAIL]);
	cJSON_AddNumberToObject(p, "buddy_fallbacks",
				(double)t->events[PCP_BUDDY_FALLBACK]);
	cJSON_AddNumberToObject(p, "zone_lock_relinquished",
				(double)t->events[ZONE_LOCK_RELINQUISH]);
	cJSON_AddNumberToObject(v, "pgalloc", (double)t->events[PGALLOC]);
	cJSON_AddNumberToObject(v, "pgfree", (double)t->events[PGFREE]);
	cJSON_AddNumberToObject(v, "alloc_failures",
				(double)t->events[ALLOC_FAIL]);
	cJSON_AddNumberToObject(v, "numa_hit", (double)t->events[NUMA_HIT]);
	cJSON_AddNumberToObject(v, "numa_miss", (double)t->events[NUMA_MISS]);
}

/* The whole result document of a run. */
cJSON *result_to_json(const struct spec *s, const struct run_result *r)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *tp, *lat, *hold, *samples, *steps, *unavailable;
	bool sim;
	double secs = r->duration_s > 0 ? r->duration_s : 1;
	const struct model_workload *wl = find_model_workload(s->workload);
	double per_op = wl->pages_per_op ? wl->pages_per_op : 1;

	cJSON_AddStringToObject(root, "engine", s->engine);
	cJSON_AddItemToObject(root, "spec", spec_to_json(s));
	cJSON_AddItemToObject(root, "machine", engine_machine_json(s));
	cJSON_AddItemToObject(root, "pagesets", pagesets_to_json());
	cJSON_AddNumberToObject(root, "duration_s", r->duration_s);
	cJSON_AddNumberToObject(root, "tasks", s->tasks);

	tp = cJSON_AddObjectToObject(root, "throughput");
	cJSON_AddNumberToObject(tp, "ops_per_s",
				(double)r->ops / per_op / secs);
	cJSON_AddNumberToObject(tp, "pages_per_s", (double)r->ops / secs);
	cJSON_AddNumberToObject(tp, "ops_per_task_per_s",
				(double)r->ops / per_op / secs / s->tasks);
	add_contention(root, s, r);

	lat = cJSON_AddObjectToObject(root, "latency_ns");
	cJSON_AddItemToObject(
		lat, "rmqueue_bulk",
		latency_json(&r->total.latency[LAT_RMQUEUE_BULK]));
	cJSON_AddItemToObject(
		lat, "free_pcppages_bulk",
		latency_json(&r->total.latency[LAT_FREE_PCPPAGES_BULK]));
	cJSON_AddItemToObject(lat, "fault",
			      latency_json(&r->total.latency[LAT_FAULT]));
	hold = cJSON_AddObjectToObject(root, "lock_hold_ns");
	/* the zone->lock holds of each side, as function_graph on the code
	 * Huang Ying moved under the lock into functions of its own */
	cJSON_AddItemToObject(
		hold, "rmqueue_bulk",
		latency_json(&r->total.latency[LAT_RMQUEUE_BULK_HOLD]));
	cJSON_AddItemToObject(
		hold, "free_pcppages_bulk",
		latency_json(&r->total.latency[LAT_FREE_PCPPAGES_BULK_HOLD]));
	for (int i = 0; i < NR_LOCK_CLASSES; i++) {
		const struct hist *h = &r->total.lock[i].hold_ns;

		/* zone and LRU always; the others where they were taken */
		if (i == LOCK_ZONE || i == LOCK_LRU || h->count)
			cJSON_AddItemToObject(hold, lock_names[i],
					      latency_json(h));
	}

	add_pcp(root, &r->total);
	samples = cJSON_AddArrayToObject(root, "samples");
	for (int i = 0; i < r->nr_samples; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "t_s", i + 1);
		cJSON_AddNumberToObject(o, "ops", (double)r->samples[i]);
		cJSON_AddItemToArray(samples, o);
	}
	steps = cJSON_AddArrayToObject(root, "scale_max_steps");
	for (int i = 0; i < r->nr_steps; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "t_s", r->steps[i].t_s);
		cJSON_AddNumberToObject(o, "scale_max", r->steps[i].scale_max);
		cJSON_AddItemToObject(o, "rmqueue_bulk",
				      step_calls_json(&r->steps[i], 0));
		cJSON_AddItemToObject(o, "free_pcppages_bulk",
				      step_calls_json(&r->steps[i], 1));
		cJSON_AddItemToArray(steps, o);
	}
	cJSON_AddBoolToObject(root, "alloc_failed", r->alloc_failed);
	cJSON_AddNumberToObject(root, "memmap_bytes", (double)r->memmap_bytes);
	cJSON_AddItemToObject(root, "invariants",
			      invariants_json(&r->inv, &r->inv_drained));
	/* only with one: a run without an instrument keeps its bytes */
	if (s->instrument.kind != INSTRUMENT_NONE)
		cJSON_AddItemToObject(root, "instrument",
				      engine_instrument_json(s, r));
	/* the model's own profile: only the sim charges the cost terms */
	sim = !strcmp(PCPLAB_PLATFORM, "sim");
	cJSON_AddItemToObject(root, "perf_profile",
			      sim ? perf_profile_json(s, r)
				  : cJSON_CreateNull());
	unavailable = cJSON_AddObjectToObject(root, "unavailable");
	if (!sim)
		cJSON_AddStringToObject(
			unavailable, "perf_profile",
			"the native engine runs the model in real time and "
			"charges no cost terms; the sim engine's perf_profile "
			"says where the model's cycles go");
	return root;
}
