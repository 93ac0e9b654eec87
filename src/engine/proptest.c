// SPDX-License-Identifier: GPL-2.0
/*
 * Property tests of the model: random sequences of allocations (every pcp
 * order, the THP order and beyond, all three migratetypes), frees on the
 * allocating or another CPU, batched frees, drains, decay, knob changes at
 * any moment (scale max, high fraction, relinquish policy) and zone flag
 * flips, on a small zone that runs dry, with the invariant checker every
 * few thousand operations and after a final drain.
 *
 *   proptest --seed S --ops N [--cpus C] [--kernel V] [--policy P]
 *            [--memory-mib M] [--check-every K] [--inject leak|count]
 *
 * --inject breaks the model on purpose halfway through (a held block
 * forgotten, a pcp->count off by one), to prove the checker notices.
 *
 * Prints one JSON line; exit 0, or 3 with the violations listed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcplab/engine.h>
#include <pcplab/random.h>

struct held_block {
	struct page *page;
	unsigned int order;
};

struct proptest {
	struct prandom rnd;
	struct held_block *held;
	unsigned long nr_held, cap, held_pages;
	unsigned long allocs, frees, alloc_failures, checks;
	struct invariant_report rep;
	unsigned long violations;
	char first[160];
	bool injected;
};

static const unsigned int orders[] = { 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 9, 10 };
static const int fractions[] = { 0, 0, 8, 10, 64, 1000 };

static void check(struct proptest *p)
{
	check_invariants(&p->rep, p->held_pages);
	p->checks++;
	if (p->rep.nr_violations && !p->violations)
		snprintf(p->first, sizeof(p->first), "%s",
			 p->rep.violations[0]);
	p->violations += p->rep.nr_violations;
}

static void do_alloc(struct proptest *p)
{
	unsigned int order = orders[prandom_below(&p->rnd, ARRAY_SIZE(orders))];
	int mt = (int)prandom_below(&p->rnd, MIGRATE_PCPTYPES);
	struct page *page;

	if (p->nr_held == p->cap)
		return;
	page = alloc_pages(order, mt);
	if (!page) {
		p->alloc_failures++;
		return;
	}
	p->held[p->nr_held++] = (struct held_block){ page, order };
	p->held_pages += 1UL << order;
	p->allocs++;
}

static void do_free(struct proptest *p, bool batch)
{
	unsigned long n = batch ? 1 + prandom_below(&p->rnd, 63) : 1;
	struct page *pages[64];
	unsigned int nr = 0;

	while (n-- && p->nr_held) {
		unsigned long i = prandom_below(&p->rnd, p->nr_held);
		struct held_block b = p->held[i];

		p->held[i] = p->held[--p->nr_held];
		p->held_pages -= 1UL << b.order;
		p->frees++;
		if (batch && !b.order)
			pages[nr++] = b.page;
		else
			free_frozen_pages(b.page, b.order);
	}
	if (nr)
		free_unref_folios(pages, nr);
}

static void do_knob(struct proptest *p, struct zone *zone)
{
	switch (prandom_below(&p->rnd, 5)) {
	case 0:
		if (pcp_policy.gen.high_autotune)
			pcp_batch_scale_max_set((int)prandom_below(&p->rnd, 7));
		break;
	case 1:
		BUG_ON(percpu_pagelist_high_fraction_set(
			fractions[prandom_below(&p->rnd,
						ARRAY_SIZE(fractions))]));
		break;
	case 2:
		pcp_policy.relinquish =
			(enum relinquish)prandom_below(&p->rnd, 3);
		break;
	case 3:
		if (prandom_below(&p->rnd, 2))
			set_bit(ZONE_BELOW_HIGH, &zone->flags);
		else
			clear_bit(ZONE_BELOW_HIGH, &zone->flags);
		break;
	default:
		if (prandom_below(&p->rnd, 4))
			clear_bit(ZONE_RECLAIM_ACTIVE, &zone->flags);
		else
			set_bit(ZONE_RECLAIM_ACTIVE, &zone->flags);
		break;
	}
}

/*
 * One random operation. Phases of 50000 operations alternate between
 * filling (allocations win) and emptying the zone, so that it runs dry,
 * fragments and falls back between migratetypes.
 */
static void step(struct proptest *p, struct zone *zone, long i)
{
	u64 r = prandom_below(&p->rnd, 1000);
	u64 alloc_share = (i / 50000) % 2 ? 300 : 650;

	arch_set_cpu((int)prandom_below(&p->rnd, (u64)nr_cpu_ids));
	if (r < alloc_share)
		do_alloc(p);
	else if (r < 900)
		do_free(p, false);
	else if (r < 960)
		do_free(p, true);
	else if (r < 975)
		refresh_cpu_vm_stats(true);
	else if (r < 985)
		drain_pages_zone(
			(unsigned)prandom_below(&p->rnd, (u64)nr_cpu_ids),
			zone);
	else if (r < 987)
		drain_all_pages(NULL);
	else
		do_knob(p, zone);
}

/* Break the model on purpose (see --inject). */
static void inject(struct proptest *p, struct zone *zone, const char *what)
{
	if (!strcmp(what, "leak") && p->nr_held) {
		p->held_pages -= 1UL << p->held[--p->nr_held].order;
		p->injected = true;
	} else if (!strcmp(what, "count")) {
		per_cpu_ptr(zone, 0)->count++;
		p->injected = true;
	}
}

static long arg_long(int argc, char **argv, const char *name, long def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return strtol(argv[i + 1], NULL, 0);
	return def;
}

static const char *arg_str(int argc, char **argv, const char *name,
			   const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return def;
}

/* The counted options of proptest: each one's default and range. */
enum { COUNT_OPS, COUNT_CPUS, COUNT_CHECK_EVERY, NR_COUNTS };
static const struct proptest_count {
	const char *name;
	long def, lo, hi;
} proptest_counts[NR_COUNTS] = {
	[COUNT_OPS] = { "--ops", 1000000, 1, 1000000000 },
	[COUNT_CPUS] = { "--cpus", 4, 1, NR_CPUS },
	[COUNT_CHECK_EVERY] = { "--check-every", 20000, 1, LONG_MAX },
};

/*
 * Row @c of proptest_counts from the command line into @out, written in
 * decimal ASCII digits and within its range; -1 after one line on stderr.
 */
static int arg_count(int argc, char **argv, const struct proptest_count *c,
		     long *out)
{
	const char *text = arg_str(argc, argv, c->name, NULL);
	char *end;

	*out = c->def;
	if (!text)
		return 0;
	errno = 0;
	*out = strtol(text, &end, 10);
	if (!*text || *end || errno ||
	    strspn(text, "+-0123456789") != strlen(text) || *out < c->lo ||
	    *out > c->hi) {
		fprintf(stderr,
			"pcplab: error: proptest %s '%.40s' is no integer in range; allowed %ld..%ld\n",
			c->name, text, c->lo, c->hi);
		return -1;
	}
	return 0;
}

/* The proptest command: run, check, print a JSON summary. */
int proptest_main(int argc, char **argv)
{
	long count[NR_COUNTS], ops, cpus, every;
	struct zone_desc zd = {
		0, ZONE_NORMAL,
		(unsigned long)arg_long(argc, argv, "--memory-mib", 48) << 8
	};
	struct proptest p = { 0 };
	const struct pcp_policy_ops *policy;
	const struct kernel_gen *gen;
	struct zone *zone;

	for (int i = 0; i < NR_COUNTS; i++)
		if (arg_count(argc, argv, &proptest_counts[i], &count[i]))
			return 2;
	ops = count[COUNT_OPS];
	cpus = count[COUNT_CPUS];
	every = count[COUNT_CHECK_EVERY];
	gen = find_kernel_gen(arg_str(argc, argv, "--kernel", "6.18"));
	policy = find_pcp_policy(arg_str(argc, argv, "--policy", "default"));
	if (!gen || !policy ||
	    (policy->needs_high_autotune && !gen->high_autotune)) {
		fprintf(stderr,
			"pcplab: error: proptest takes --kernel (%s), --policy (%s; those moving high need 6.18+)\n",
			kernel_gen_names(), pcp_policy_names());
		return 2;
	}
	pcp_policy.gen = *gen;
	pcp_policy.ops = policy;
	pcp_policy.relinquish = gen->relinquish;
	prandom_seed(&p.rnd, (u64)arg_long(argc, argv, "--seed", 1));
	BUG_ON(free_area_init(&zd, 1, (int)cpus, NULL));
	zone = &NODE_DATA(0)->node_zones[0];
	p.cap = zd.managed_pages;
	p.held = calloc(p.cap, sizeof(*p.held));
	BUG_ON(!p.held);

	for (long i = 0; i < ops; i++) {
		if (i >= ops / 2 && !p.injected)
			inject(&p, zone, arg_str(argc, argv, "--inject", ""));
		step(&p, zone, i);
		if ((i + 1) % every == 0)
			check(&p);
	}
	while (p.nr_held)
		do_free(&p, false);
	drain_all_pages(NULL);
	check(&p);
	if (p.rep.pcp_pages ||
	    p.rep.buddy_pages + p.rep.deferred_pages != p.rep.managed_pages) {
		if (!p.violations)
			snprintf(
				p.first, sizeof(p.first),
				"after freeing everything: pcp %lu, buddy %lu + deferred %lu != managed %lu",
				p.rep.pcp_pages, p.rep.buddy_pages,
				p.rep.deferred_pages, p.rep.managed_pages);
		p.violations++;
	}
	printf("{\"kernel\":\"%s\",\"policy\":\"%s\",\"ops\":%ld,"
	       "\"cpus\":%ld,\"checks\":%lu,"
	       "\"allocs\":%lu,\"frees\":%lu,\"alloc_failures\":%lu,"
	       "\"violations\":%lu,\"first_violation\":\"%s\"}\n",
	       pcp_policy.gen.name, policy->name, ops, cpus, p.checks, p.allocs,
	       p.frees, p.alloc_failures, p.violations, p.first);
	free(p.held);
	free_area_exit();
	return p.violations ? 3 : 0;
}
