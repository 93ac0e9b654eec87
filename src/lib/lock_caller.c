// SPDX-License-Identifier: GPL-2.0
/*
 * The functions that take locks, by id. Each spin_lock() site registers a
 * struct lock_caller (LOCK_CALLER() in platform.h); before main() runs,
 * every site gets the id of its function's name, the sites of one function
 * sharing it as `perf lock contention` merges them. An acquisition then
 * finds its caller's row in the lock statistics by that id: no name is
 * compared while the model runs.
 */
#include <string.h>

#include <pcplab/mm.h>

/* Weak: a program with no spin_lock() site has an empty registry. */
extern struct lock_caller *const __start_pcplab_lock_callers[]
	__attribute__((weak));
extern struct lock_caller *const __stop_pcplab_lock_callers[]
	__attribute__((weak));

static const char *caller_names[NR_LOCK_CALLERS];
static int nr_caller_names;

/* Give every registered site the id of its function's name. */
static void __attribute__((constructor)) lock_callers_init(void)
{
	struct lock_caller *const *pos;

	for_each_registry_entry (pos, pcplab_lock_callers) {
		struct lock_caller *caller = *pos;
		int id = 0;

		while (id < nr_caller_names &&
		       strcmp(caller_names[id], caller->name))
			id++;
		if (id == nr_caller_names) {
			/* more lock-taking functions: raise NR_LOCK_CALLERS */
			BUG_ON(nr_caller_names == NR_LOCK_CALLERS);
			caller_names[nr_caller_names++] = caller->name;
		}
		caller->id = id;
	}
}

/* The name of the function whose caller id is @id. */
const char *lock_caller_name(int id)
{
	return caller_names[id];
}
