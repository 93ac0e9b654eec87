// SPDX-License-Identifier: GPL-2.0
/*
 * event-driven: pcp->high moves on refill and drain events only, with no
 * time-based decay, as the 2023 review of Huang Ying's "mm: PCP high
 * auto-tuning" proposed (tune on the events that show a list is too small
 * or too large, symmetric with the free_factor drain scaling; "a PID
 * control problem"), instead of the vmstat worker's periodic decay:
 *
 *  - refill event (an empty list refilled by rmqueue_bulk): high grows by
 *    the refill, up to high_max, as v6.7's nr_pcp_alloc() already does
 *    while the zone is above its high watermark;
 *  - drain event (a free that finds count at high): high shrinks by batch,
 *    down to high_min, and the drain frees down to the new high;
 *  - no decay: decay_pcp_high() does nothing, so a CPU that stops
 *    allocating keeps its pages until its next free or drain_all_pages().
 *
 * Reclaim and free_high keep the generation's rules.
 */
#include <pcplab/mm.h>

/* The step batch moves by on an event: an eighth of the zone's batch. */
static int batch_step(const struct zone *zone)
{
	return max(zone->pageset_batch >> 3, 1);
}

static int event_nr_alloc(struct per_cpu_pages *pcp, struct zone *zone,
			  unsigned int order)
{
	int cap = min(zone->pageset_batch << pcp_batch_scale_max(),
		      max(READ_ONCE(pcp->high_min), zone->pageset_batch));
	int batch = READ_ONCE(pcp->batch);

	if (!order && batch < cap) /* the refill event */
		WRITE_ONCE(pcp->batch, min(batch + batch_step(zone), cap));
	return __nr_pcp_alloc(pcp, zone, order);
}

static int event_nr_high(struct per_cpu_pages *pcp, struct zone *zone,
			 int batch, bool free_high)
{
	int high_min = READ_ONCE(pcp->high_min);
	int high = clamp(pcp->high, high_min, READ_ONCE(pcp->high_max));

	if (!high || free_high)
		return 0;
	if (test_bit(ZONE_RECLAIM_ACTIVE, &zone->flags))
		return min(batch << 2, high);
	if (pcp->count >= high) { /* the drain event */
		high = max(high - batch, high_min);
		WRITE_ONCE(pcp->batch,
			   max(batch - batch_step(zone), zone->pageset_batch));
	}
	pcp->high = high;
	return high;
}

DEFINE_PCP_POLICY(event_driven, .name = "event-driven",
		  .summary =
			  "high grows on refills, shrinks by batch on drains; "
			  "no time-based decay (the 2023 review)",
		  .nr_alloc = event_nr_alloc, .nr_high = event_nr_high,
		  .no_time_decay = true, .needs_high_autotune = true);
