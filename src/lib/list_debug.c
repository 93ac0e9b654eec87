// SPDX-License-Identifier: GPL-2.0
/*
 * CONFIG_DEBUG_LIST: the kernel build's list checks (lib/list_debug.c).
 * With it every list_add() and list_del() calls these out of line, under
 * whatever lock the operation holds: zone->lock for the buddy's free
 * lists, the pcp lock for the pcp lists. LKP's kernels of 2023 had it
 * (x86_64-rhel-8.3 until lkp-tests 9a429333e), and their perf-profiles
 * show __list_del_entry_valid_or_report at 1 to 5% of all cycles: it is
 * a fact of the build a figure came from, not of a kernel generation
 * (docs/machines.md, "What a kernel generation adds, by commit").
 *
 * Each check costs the running CPU its measured cycles (cost(), the
 * machine's list_add_check_cycles and list_del_check_cycles; the sim
 * only) and really checks the model's lists: a corrupt list is a model
 * bug. The model's memory map grows under a running benchmark, which a
 * kernel has done before it starts (deferred_grow_zone()): that growth's
 * checks are made but not charged (list_checks_uncharged()).
 */
#include <stdio.h>

#include <pcplab/mm.h>

bool config_debug_list;

/* Set while the current thread's list operations are the model's own. */
static _Thread_local bool uncharged;

/* Make the checks of this thread charge nothing (@on) or their cost again. */
void list_checks_uncharged(bool on)
{
	uncharged = on;
}

/* The kernel's report, with BUG_ON_DATA_CORRUPTION: stop. */
static __attribute__((cold)) void report(const char *what, u32 off)
{
	char where[64];

	snprintf(where, sizeof(where), "list %s corruption at list offset %u",
		 what, off);
	model_bug(__FILE__, __LINE__, where);
}

/* @new between @prev and @next: they must be neighbours, @new neither. */
__attribute__((noinline)) bool __list_add_valid_or_report(struct list_head *new,
							  u32 prev, u32 next)
{
	u32 off = list_off(new);

	if (likely(!uncharged))
		cost(COST_LIST_ADD_CHECK, 1);
	if (unlikely(!prev || !next || list_at(next)->prev != prev ||
		     list_at(prev)->next != next || off == prev || off == next))
		report("add", off);
	return true;
}

/* @entry must be linked (not poisoned) and its neighbours' neighbour. */
__attribute__((noinline)) bool
__list_del_entry_valid_or_report(struct list_head *entry)
{
	u32 off = list_off(entry), prev = entry->prev, next = entry->next;

	if (likely(!uncharged))
		cost(COST_LIST_DEL_CHECK, 1);
	if (unlikely(!prev || !next || list_at(prev)->next != off ||
		     list_at(next)->prev != off))
		report("del", off);
	return true;
}
