// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel generations: which PCP behaviour each modelled kernel has.
 *
 * The reference threads span seven years of kernels, from the 2018 batch
 * sweep on v4.18 to the 2025 zone-lock thread merged in v6.19
 * (python/pcplab/reference/README.md names them). Each flag names the
 * commit or release that introduced the behaviour.
 */
#include <string.h>

#include <pcplab/mm.h>

static const struct kernel_gen kernel_gens[] = {
	{
		/*
		 * v4.18: the 2018 batch sweep (d8a759b57035 doubled the
		 * batch cap from 512 KiB to 1 MiB in v4.19, so 4.18 computes
		 * 31). Order-0 pages only on the pcp lists, high = 6 * batch,
		 * refill and drain exactly batch, IRQs off instead of a pcp
		 * lock, pagevecs of 15, release_pages relocking lru_lock
		 * every SWAP_CLUSTER_MAX (32) pages and freeing munmap's
		 * mmu_gather batch (MAX_GATHER_BATCH, 510) after its LRU work.
		 */
		.name = "4.18",
		.batch_cap_bytes = 512 * 1024,
		.lru_batch = 15,
		.lru_release_batch = SWAP_CLUSTER_MAX,
		.release_gather = MAX_GATHER_BATCH,
		.relinquish = RELINQUISH_OFF,
	},
	{
		/*
		 * v6.6: high-order pcp lists (v5.13), high from the low
		 * watermark or percpu_pagelist_high_fraction and free_factor
		 * drain scaling (v5.14), the pcp spinlock with trylock (v6.0);
		 * release_pages as in v4.18 (folios_put_release off).
		 */
		.name = "6.6",
		.folio_fault = true,
		.pcp_high_order = true,
		.high_from_zone = true,
		.free_factor = true,
		.pcp_trylock = true,
		.batch_cap_bytes = 1024 * 1024,
		.lru_batch = 15,
		.lru_release_batch = SWAP_CLUSTER_MAX,
		.release_gather = MAX_GATHER_BATCH,
		.relinquish = RELINQUISH_OFF,
	},
	{
		/*
		 * v6.18: "mm: PCP high auto-tuning" (v6.7), chunked
		 * drain_pages_zone (55f77df7d715, v6.10; 66eca1021a42, v6.11),
		 * the v6.16 free_high threshold (c544a952ba61), folio batches
		 * of 31 (release_pages through folios_put_refs() since v6.9:
		 * 99fbb6bfc16f with PAGEVEC_SIZE 15, 9cecde80aae0 made it 31),
		 * so both release batches are the folio_batch. The spec's
		 * pagevec_size sets the folio_batch, its folios_put_release
		 * whether release_pages goes through it (spec.c resolves the
		 * three batches from the two keys the way this table has them).
		 */
		.name = "6.18",
		.folio_fault = true,
		.pcp_high_order = true,
		.high_from_zone = true,
		.high_autotune = true,
		.free_high_v616 = true,
		.drain_chunked = true,
		.pcp_trylock = true,
		.batch_cap_bytes = 1024 * 1024,
		.lru_batch = 31,
		.folios_put_release = true,
		.lru_release_batch = 31,
		.release_gather = 31,
		.relinquish = RELINQUISH_OFF,
	},
	{
		/*
		 * v6.19: Joshua Hahn's "Batch callers of free_pcppages_bulk"
		 * (decay_pcp_high and free_frozen_page_commit free in
		 * pcp->batch chunks, dropping both locks in between).
		 */
		.name = "6.19",
		.folio_fault = true,
		.pcp_high_order = true,
		.high_from_zone = true,
		.high_autotune = true,
		.free_high_v616 = true,
		.drain_chunked = true,
		.pcp_trylock = true,
		.batch_cap_bytes = 1024 * 1024,
		.lru_batch = 31,
		.folios_put_release = true,
		.lru_release_batch = 31,
		.release_gather = 31,
		.relinquish = RELINQUISH_BATCHED,
	},
};

/* The generation called @name, or NULL. */
const struct kernel_gen *find_kernel_gen(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(kernel_gens); i++)
		if (!strcmp(kernel_gens[i].name, name))
			return &kernel_gens[i];
	return NULL;
}

/* The generation names, for error messages. */
const char *kernel_gen_names(void)
{
	return "4.18, 6.6, 6.18, 6.19";
}
