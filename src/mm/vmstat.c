// SPDX-License-Identifier: GPL-2.0
/*
 * The per-CPU vmstat work (mm/vmstat.c): every vm.stat_interval each CPU
 * folds its counters and, since v6.7, decays the pcp->high of its pagesets.
 */
#include <pcplab/mm.h>

/*
 * One run of refresh_cpu_vm_stats() on the current CPU. Returns whether a
 * pageset still had work (high above high_min, or pages drained).
 */
bool refresh_cpu_vm_stats(bool do_pagesets)
{
	int cpu = smp_processor_id();
	bool changes = false;

	if (!do_pagesets)
		return false;
	for (int nid = 0; nid < nr_node_ids; nid++) {
		struct zone *zone;

		for_each_populated_zone_of (NODE_DATA(nid), zone)
			if (decay_pcp_high(zone, per_cpu_ptr(zone, cpu)))
				changes = true;
	}
	return changes;
}
