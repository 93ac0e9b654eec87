// SPDX-License-Identifier: GPL-2.0
/*
 * What one CONFIG_DEBUG_LIST check costs on this host: the out-of-line
 * __list_add_valid_or_report() and __list_del_entry_valid_or_report() of
 * lib/list_debug.c (v6.6 on; __list_add_valid and __list_del_entry_valid
 * before), written here as the kernel writes them: a noinline function
 * that loads the neighbours' links and compares them, and returns.
 *
 * Each is called back to back on 64-byte nodes (a struct page's line),
 * the caller having read the entry's own links first, as list_del() and
 * list_add() callers in mm/ have: in L1 (a ring of 16 nodes), and cold
 * (2^21 nodes, 128 MiB, linked and visited in two random orders, so both
 * neighbours of a checked entry miss). The same loop without the call is
 * timed too; the difference, per call, is what the check adds. Cycles are
 * core cycles: the time times the clock a chain of dependent adds runs at
 * (one a cycle), so a host without a PMU (a guest) can count them; TSC
 * ticks beside them. Cold calls: CALLS / 40. Prints one JSON object; bench/run.py records it.
 *
 *	bench-listcheck [CALLS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <pcplab/hostinfo.h>

#define ROUNDS 9
#define HOT_NODES 16
#define COLD_NODES (1UL << 21)

struct list_head {
	struct list_head *next, *prev;
};

/* A struct page: its lru links and the rest of its line. */
struct node {
	unsigned long flags;
	struct list_head lru;
	char rest[40];
} __attribute__((aligned(64)));

/* LIST_POISON1/2 without CONFIG_ILLEGAL_POINTER_VALUE */
#define LIST_POISON1 ((struct list_head *)0x100)
#define LIST_POISON2 ((struct list_head *)0x122)

/* The kernel's report path: never taken on a sound list. */
static __attribute__((noipa, cold)) bool report(const char *what)
{
	fprintf(stderr, "bench-listcheck: list %s corruption\n", what);
	abort();
}

/* noipa: out of line and opaque, as an exported function of another file */
static __attribute__((noipa)) bool
__list_add_valid_or_report(struct list_head *new, struct list_head *prev,
			   struct list_head *next)
{
	if (!prev || !next || next->prev != prev || prev->next != next ||
	    new == prev || new == next)
		return report("add");
	return true;
}

static __attribute__((noipa)) bool
__list_del_entry_valid_or_report(struct list_head *entry)
{
	struct list_head *prev = entry->prev, *next = entry->next;

	if (!next || !prev || next == LIST_POISON1 || prev == LIST_POISON2 ||
	    prev->next != entry || next->prev != entry)
		return report("del");
	return true;
}

enum check { CHECK_NONE, CHECK_ADD, CHECK_DEL };

/*
 * ns per step of @calls steps over @order (@n entries, a power of two): read the
 * entry's links as the caller does, then make the check @what.
 */
static double steps_ns(struct node *nodes, const unsigned int *order,
		       unsigned long n, unsigned long calls, enum check what)
{
	static struct node outsider; /* the node list_add() inserts */
	unsigned long ok = 0;
	u64 start = clock_monotonic_ns();

	for (unsigned long i = 0; i < calls; i++) {
		struct list_head *e = &nodes[order[i & (n - 1)]].lru;
		struct list_head *next =
			*(struct list_head *volatile *)&e->next;

		if (what == CHECK_ADD)
			ok += __list_add_valid_or_report(&outsider.lru, e,
							 next);
		else if (what == CHECK_DEL)
			ok += __list_del_entry_valid_or_report(e);
		else
			ok += next != NULL;
	}
	__asm__ volatile("" : : "r"(ok));
	return (double)(clock_monotonic_ns() - start) / (double)calls;
}

static u64 xorshift(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void shuffle(unsigned int *a, unsigned long n, u64 *seed)
{
	for (unsigned long i = n - 1; i > 0; i--) { /* Fisher-Yates */
		unsigned long j = xorshift(seed) % (i + 1);
		unsigned int t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

/* Link @n nodes into one circular list in a random order; return the visit order. */
static unsigned int *make_list(struct node *nodes, unsigned long n, u64 *seed)
{
	unsigned int *link = malloc(n * sizeof(*link));
	unsigned int *visit = malloc(n * sizeof(*visit));

	if (!link || !visit)
		exit(1);
	for (unsigned long i = 0; i < n; i++)
		link[i] = visit[i] = (unsigned int)i;
	shuffle(link, n, seed);
	shuffle(visit, n, seed);
	for (unsigned long i = 0; i < n; i++) {
		struct list_head *e = &nodes[link[i]].lru;

		e->next = &nodes[link[(i + 1) % n]].lru;
		e->prev = &nodes[link[(i + n - 1) % n]].lru;
	}
	free(link);
	return visit;
}

/*
 * The core clock (GHz) of a chain of dependent register adds, one a cycle.
 * Not adds of an immediate: this host's core (a Xeon in a Firecracker
 * guest) folds chains of those in its renamer and runs about four a ns.
 */
static double core_ghz(void)
{
	unsigned long x = 1, adds = 200000000UL;
	u64 start = clock_monotonic_ns();

	for (unsigned long i = 0; i < adds; i += 4)
#if defined(__aarch64__)
		__asm__ volatile("add %0, %0, %0\n\tadd %0, %0, %0\n\t"
				 "add %0, %0, %0\n\tadd %0, %0, %0"
				 : "+r"(x));
#else
		__asm__ volatile("add %0, %0\n\tadd %0, %0\n\t"
				 "add %0, %0\n\tadd %0, %0"
				 : "+r"(x));
#endif
	return (double)adds / (double)(clock_monotonic_ns() - start);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Print "name":{"ns":..,"cycles":..,"tsc":..} of the median round's extra ns per call. */
static void measure(const char *name, struct node *nodes,
		    const unsigned int *order, unsigned long n,
		    unsigned long calls, enum check what, double ghz,
		    double tsc_ghz, bool last)
{
	double extra[ROUNDS];

	steps_ns(nodes, order, n, calls / 4, what); /* warm caches, TLB */
	for (int r = 0; r < ROUNDS; r++)
		extra[r] = steps_ns(nodes, order, n, calls, what) -
			   steps_ns(nodes, order, n, calls, CHECK_NONE);
	qsort(extra, ROUNDS, sizeof(extra[0]), cmp_double);
	printf("\"%s\":{\"ns_per_call\":%.3f,\"cycles_per_call\":%.2f,"
	       "\"tsc_ticks_per_call\":%.2f,\"cycles_min\":%.2f,"
	       "\"cycles_max\":%.2f}%s",
	       name, extra[ROUNDS / 2], extra[ROUNDS / 2] * ghz,
	       extra[ROUNDS / 2] * tsc_ghz, extra[0] * ghz,
	       extra[ROUNDS - 1] * ghz, last ? "" : ",");
}

int main(int argc, char **argv)
{
	unsigned long calls =
		argc > 1 ? strtoul(argv[1], NULL, 0) : 200000000UL;
	struct node *hot = aligned_alloc(64, HOT_NODES * sizeof(*hot));
	struct node *cold =
		mmap(NULL, COLD_NODES * sizeof(*cold), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	u64 seed = 0x9e3779b97f4a7c15ULL, mult;
	unsigned int *hot_order, *cold_order;
	double ghz, tsc_hz = 0;
	char model[256];

	if (!hot || cold == MAP_FAILED)
		return 1;
	hot_order = make_list(hot, HOT_NODES, &seed);
	cold_order = make_list(cold, COLD_NODES, &seed);
	ghz = core_ghz();
	if (!tsc_calibrate(100, &mult, &tsc_hz))
		tsc_hz = 0;
	cpu_model_name(model, sizeof(model));
	printf("{\"cpu_model\":\"%s\",\"core_ghz\":%.3f,\"tsc_ghz\":%.3f,"
	       "\"calls\":%lu,\"rounds\":%d,\"cold_nodes\":%lu,",
	       model, ghz, tsc_hz / 1e9, calls, ROUNDS, COLD_NODES);
	measure("add_l1", hot, hot_order, HOT_NODES, calls, CHECK_ADD, ghz,
		tsc_hz / 1e9, false);
	measure("del_l1", hot, hot_order, HOT_NODES, calls, CHECK_DEL, ghz,
		tsc_hz / 1e9, false);
	measure("add_cold", cold, cold_order, COLD_NODES, calls / 40, CHECK_ADD,
		ghz, tsc_hz / 1e9, false);
	measure("del_cold", cold, cold_order, COLD_NODES, calls / 40, CHECK_DEL,
		ghz, tsc_hz / 1e9, true);
	printf("}\n");
	return 0;
}
