// SPDX-License-Identifier: GPL-2.0
/*
 * no-merge: an order-0 page freed to the buddy is not merged with its buddy.
 *
 * Aaron Lu, patch 2/4 of "[RFC PATCH v2 0/4] Eliminate zone->lock
 * contention for will-it-scale/page_fault1 and parallel free" (linux-mm,
 * 2018-03-20), which skips "doing merge for order 0 pages to avoid cache
 * misses on buddy's struct page": an order-0 free only goes on the order-0
 * free list. Its cover letter measured zone->lock contention on the free
 * path of page_fault1 at full load on a 2-socket Skylake fall from 35% to
 * 1.1%.
 *
 * Not modelled: the RFC's compaction merges the skipped pages, and the
 * skipping stops while compaction fails in the zone (v2; while compaction
 * runs, in v3). The model has no compaction, so under this policy order-0
 * pages stay unmerged and a higher-order allocation finds only the blocks
 * nobody split. The RFC was never merged.
 */
#include <pcplab/mm.h>

DEFINE_PCP_POLICY(no_merge, .name = "no-merge",
		  .summary =
			  "order-0 frees go on the order-0 list unmerged: no "
			  "buddy struct page read under zone->lock (2018 RFC)",
		  .skip_merge_order0 = true);
