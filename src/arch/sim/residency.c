// SPDX-License-Identifier: GPL-2.0
/*
 * Where a zone->lock hold's struct pages are: the LLC or DRAM, drawn once
 * per hold.
 *
 * Under zone->lock "the most time consuming part ... is cache misses on
 * struct page" (Aaron Lu, linux-mm 2018-02-05). machine.c charges each
 * buddy page zone_page_misses cold lines at the mean cold-line latency:
 * an LLC hit as often as the LLC holds the node's churned struct pages,
 * DRAM otherwise. A hold does not pay that mean page by page. rmqueue_bulk
 * takes pcp->batch blocks off the head of one free list, and
 * free_pcppages_bulk merges a batch of pages whose buddies sit in the same
 * few pageblocks: the struct pages a hold touches were last touched
 * together (by the drain that freed them, or the refill that split their
 * block), so they are in the LLC together or gone from it together. Each
 * hold therefore draws once, with the LLC's share of the churn as the
 * chance of a hit, and pays every page's buddy misses, and the cold lines
 * a new holder misses in the free-list blocks it splits or merges into
 * (zone_lock_misses), at the LLC latency or at DRAM's: the same mean as
 * before, a spread of holds the queue behind the lock sees (issue 33,
 * "the spread of a hold ... LLC residency"). Only facts of the profile enter: the LLC share, llc_ns
 * and the DRAM latency (machine.c); a profile that replaces the buddy's
 * costs in [costs] keeps them fixed.
 *
 * The draw uses a stream of its own per CPU, seeded apart from the
 * task's, so the fault's work jitter and the workload's draws are the
 * same as without it, and a run stays deterministic.
 */
#include <math.h>

#include <pcplab/mm.h>
#include <pcplab/random.h>
#include "sim.h"

/* The cost kinds whose per-page figure holds buddy struct page misses. */
static const enum cost_kind missing_kinds[] = { COST_BUDDY_ALLOC_PAGE,
						COST_BUDDY_FREE_PAGE };

static void charge(struct vcpu *me, s64 delta)
{
	for (size_t i = 0; i < ARRAY_SIZE(missing_kinds); i++)
		me->cost[missing_kinds[i]] += delta;
}

/* xorshift64: the CPU's residency stream (never 0 once seeded). */
static u64 next_draw(struct vcpu *me)
{
	u64 x = me->residency_rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	me->residency_rng = x;
	return x;
}

/*
 * Seed task @task's CPU @v's stream from the run's @seed, apart from the
 * task's own stream (t->rnd), whose draws the workload makes.
 */
void residency_seed(struct vcpu *v, u64 seed, int task)
{
	struct prandom r;

	prandom_seed(&r, ~(seed * 1000003ULL + (u64)task));
	v->residency_rng = prandom_u64(&r) | 1;
}

/*
 * A zone->lock hold starts: draw whether its struct pages are in the LLC
 * and charge every buddy page of the hold at that latency instead of the
 * mean (undone by residency_hold_end()).
 */
void residency_hold_start(struct vcpu *me)
{
	const struct sim_machine *m = &sim_machine;
	bool hit;

	if (!m->residency_spread || !me->residency_rng)
		return;
	hit = (next_draw(me) >> 11) < m->residency_hit_q;
	me->residency_delta =
		hit ? m->residency_hit_delta : m->residency_miss_delta;
	charge(me, me->residency_delta);
}

/*
 * What the hold's draw adds to the cold lines a new holder misses
 * (zone_lock_misses: the free-list blocks it splits or merges into, the
 * same pageblocks as its pages): their LLC or DRAM latency less the mean.
 */
s64 residency_pull_delta(const struct vcpu *me)
{
	const struct sim_machine *m = &sim_machine;

	if (!me->residency_delta)
		return 0;
	return me->residency_delta == m->residency_hit_delta
		       ? m->residency_pull_hit_delta
		       : m->residency_pull_miss_delta;
}

/* The hold ends: its buddy pages cost the mean again. */
void residency_hold_end(struct vcpu *me)
{
	charge(me, -me->residency_delta);
	me->residency_delta = 0;
}

/*
 * Per page, what an LLC hit and a DRAM miss of a whole hold add to the
 * mean buddy miss machine.c charges: zone_page_misses lines at llc_ns, or
 * at the DRAM latency, less their mean. @hit: the share of the node's
 * churned struct pages the LLC holds; @dram_ns: its DRAM latency.
 */
void residency_derive(double hit, double dram_ns)
{
	struct sim_machine *m = &sim_machine;
	double lines = m->k.zone_page_misses;
	bool fixed = m->cost_override_ns[COST_BUDDY_ALLOC_PAGE] >= 0 ||
		     m->cost_override_ns[COST_BUDDY_FREE_PAGE] >= 0;

	m->residency_hit_q = (u64)(hit * (double)(1ULL << 53));
	m->residency_hit_delta =
		(s64)llround(lines * (m->hw.llc_ns - m->miss_ns) * 1000);
	m->residency_miss_delta =
		(s64)llround(lines * (dram_ns - m->miss_ns) * 1000);
	m->residency_pull_hit_delta = (s64)llround(
		m->k.zone_lock_misses * (m->hw.llc_ns - m->miss_ns) * 1000);
	m->residency_pull_miss_delta = (s64)llround(
		m->k.zone_lock_misses * (dram_ns - m->miss_ns) * 1000);
	m->residency_spread = !fixed && hit > 0 && hit < 1 &&
			      m->residency_hit_delta != m->residency_miss_delta;
}

/*
 * The draw as the result's machine costs report it: the chance of an LLC
 * hold, each kind of hold's buddy misses per page, and whether holds draw.
 */
void residency_json(cJSON *costs)
{
	const struct sim_machine *m = &sim_machine;
	double mean = m->k.zone_page_misses * m->miss_ns;

	cJSON_AddBoolToObject(costs, "hold_residency_drawn",
			      m->residency_spread);
	cJSON_AddNumberToObject(costs, "hold_llc_share",
				(double)m->residency_hit_q /
					(double)(1ULL << 53));
	cJSON_AddNumberToObject(costs, "hold_llc_buddy_miss_ns",
				mean + (double)m->residency_hit_delta / 1000);
	cJSON_AddNumberToObject(costs, "hold_dram_buddy_miss_ns",
				mean + (double)m->residency_miss_delta / 1000);
}
