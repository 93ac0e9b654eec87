// SPDX-License-Identifier: GPL-2.0
/*
 * uma-lockfail: FreeBSD UMA's per-CPU bucket sizing, applied to pcp->batch.
 *
 * UMA grows a zone's bucket size by one item whenever zone_domain_lock()
 * found the zone lock held (its "lockfail": sys/vm/uma_core.c, the lock is
 * tried first and a failure sets the flag before the blocking lock), up to
 * the zone's maximum, and shrinks buckets when memory is trimmed. Here the
 * bucket is pcp->batch, the size of every refill and drain:
 *
 *  - a refill or drain that finds zone->lock held grows pcp->batch by one,
 *    up to the zone's batch << pcp_batch_scale_max (the largest refill the
 *    kernel makes) and never above high_min, so that high >= batch holds;
 *  - UMA_SHRINK_EVERY acquisitions in a row that find it free shrink
 *    pcp->batch by one, down to the zone's batch ("shrinks slowly").
 *
 * The generation's refill and drain rules then run on that batch.
 */
#include <pcplab/mm.h>

/* Uncontended zone->lock acquisitions that shrink the batch by one. */
#define UMA_SHRINK_EVERY 16

/* The largest batch: the kernel's largest refill, at most high_min. */
static int uma_batch_max(const struct per_cpu_pages *pcp,
			 const struct zone *zone)
{
	int cap = zone->pageset_batch << pcp_batch_scale_max();
	int high_min = READ_ONCE(pcp->high_min);

	return max(zone->pageset_batch, min(cap, high_min));
}

static void uma_zone_locked(struct per_cpu_pages *pcp, struct zone *zone,
			    bool waited)
{
	int batch = READ_ONCE(pcp->batch);

	if (waited) {
		pcp->policy_count = 0;
		if (batch < uma_batch_max(pcp, zone))
			WRITE_ONCE(pcp->batch, batch + 1);
		return;
	}
	if (++pcp->policy_count < UMA_SHRINK_EVERY)
		return;
	pcp->policy_count = 0;
	if (batch > zone->pageset_batch)
		WRITE_ONCE(pcp->batch, batch - 1);
}

DEFINE_PCP_POLICY(
	uma_lockfail, .name = "uma-lockfail",
	.summary = "batch grows by one when zone->lock was found held, "
		   "shrinks by one every 16 free acquisitions (FreeBSD UMA)",
	.zone_locked = uma_zone_locked);
