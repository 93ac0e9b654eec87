// SPDX-License-Identifier: GPL-2.0
/*
 * The DRAM channels of each node, shared by every CPU that clears or
 * copies a page there: at 100+ tasks clearing 4 KiB pages a socket's
 * memory controllers, not the cores, set the pace.
 *
 * Each node's channels are one server in virtual time: a page occupies it
 * for PAGE_SIZE / (the node's bandwidth), first come first served. CPUs
 * reach it without the conservative order of the locks (a sync per page
 * would double the simulator's context switches), so one may arrive a few
 * tens of microseconds out of virtual-time order; the server therefore
 * only holds a CPU back once it is booked more than DRAM_SLACK_PS ahead of
 * that CPU. Below saturation nothing waits; at saturation the node's pages
 * per second are its bandwidth, shared first come first served. The
 * result stays deterministic: the order CPUs run in is.
 */
#include <string.h>

#include <pcplab/mm.h>
#include "sim.h"

#define DRAM_SLACK_PS (1000ULL * 1000 * 1000) /* 1 ms: above any skew */

/* ps: when each node's channels are free */
static u64 booked_until[MAX_NUMNODES];

/*
 * ps the channels are busy for a page written after 0 or 1 pages read:
 * the machine's figures multiplied out once per run, not once per page.
 */
static u64 write_xfer_ps[2];

/* Every node's channels idle (a new run of the derived machine). */
void dram_init(void)
{
	memset(booked_until, 0, sizeof(booked_until));
	for (int reads = 0; reads < 2; reads++)
		write_xfer_ps[reads] = sim_machine.page_xfer_ps *
				       (u64)(sim_machine.clear_pages + reads);
}

/*
 * Write a page at @page, after @reads pages read (a copy reads one): the
 * core works @core_ps, the channels of the page's node carry the bytes (a
 * CPU without ERMS reads every line for ownership first), and a page on
 * another node costs its first remote miss; all of it is @term's time.
 */
void dram_write_page(const struct page *page, u64 core_ps, int reads, int term)
{
	struct vcpu_hot *v = current_vcpu;
	int nid = zone_to_nid(page_zone(page));
	u64 *booked = &booked_until[nid];
	u64 done = v->clock + core_ps;

	*booked = max(*booked, v->clock) + write_xfer_ps[reads];
	if (v->id >= 0 && nid != cpu_to_node(v->id))
		done += sim_machine.remote_page_ps;
	if (*booked > done + DRAM_SLACK_PS)
		done = *booked - DRAM_SLACK_PS;
	v->prof[term] += done - v->clock;
	v->clock = done;
	v->hot_page = page;
}

/*
 * A user space write of @bytes to @page. A whole page written cold costs
 * what clearing it does; written just after this CPU wrote it whole (the
 * fault's clear, the previous pass), its 64 lines are still in L1/L2: the
 * stores run at the core's store width and DRAM sees nothing new (the
 * dirty lines are written back once, as the clear's page already was).
 */
void write_page(struct page *page, size_t bytes)
{
	struct vcpu_hot *v = current_vcpu;

	if (bytes < PAGE_SIZE / 2)
		return;
	if (page != v->hot_page) {
		dram_write_page(page, v->cost[COST_CLEAR_PAGE], 0,
				PROF_USER_WRITE);
		return;
	}
	v->clock += sim_machine.hot_write_ps;
	v->prof[PROF_USER_WRITE] += sim_machine.hot_write_ps;
}
