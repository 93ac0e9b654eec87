/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The spec keys: one table for every engine. A row names a key of the run
 * spec (docs/engine-protocol.md), its type and range (the kernel's own,
 * where the kernel has the knob), its default, which engines take it, the
 * field it fills in each engine's spec, and a line of help. The engines
 * check and parse their spec with it and write the resolved spec from it;
 * `pcplab-<engine> keys` prints it, and the front end's options, range
 * checks and the documentation's key table are made from that print.
 *
 * A new knob is one row here plus its use (docs/architecture.md).
 */
#ifndef PCPLAB_SPEC_KEYS_H
#define PCPLAB_SPEC_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "instrument.h"

/* One line of bad input: what is wrong; what is allowed. */
#define SPEC_ERRLEN 512

/* Tasks of one run: each is one model CPU (NR_CPUS), or one host task. */
#define SPEC_MAX_TASKS 1024
/*
 * The model's memory map reaches 8 TiB less the 256 MiB that hold the list
 * heads (memmap.c, which checks this agrees with sparse_max_pages()).
 */
#define SPEC_MAX_MEMORY_MIB 8323072
/*
 * PAGEVEC_SIZE's bound: the pages a struct folio_batch holds (mm.h). The
 * kernel has had 15 (to v6.9-rc1) and 31 (9cecde80aae0, v6.9-rc2): the
 * header and 31 pointers make the struct a power of two.
 */
#define FOLIO_BATCH_MAX 31

enum spec_key_type {
	KEY_INT,
	KEY_NUMBER,
	KEY_BOOL,
	KEY_CHOICE, /* one of .choices, stored as its index */
	KEY_STRING,
	KEY_LIST,
	KEY_OBJECT,
};

/* The engines that take a key. */
#define ENGINE_NATIVE (1U << 0)
#define ENGINE_SIM (1U << 1)
#define ENGINE_HOST (1U << 2)
#define ENGINES_MODEL (ENGINE_NATIVE | ENGINE_SIM)
#define ENGINES_ALL (ENGINES_MODEL | ENGINE_HOST)

/* Row flags. */
#define KEY_OR_ZERO (1U << 0) /* 0 is allowed besides lo..hi (0: off) */
#define KEY_COMPUTED (1U << 1) /* absent: the engine computes the default */
#define KEY_OWN_PARSE (1U << 2) /* the engine's own function parses it */
#define KEY_INTERNAL (1U << 3) /* front end to engine only: never echoed */

struct spec_key {
	const char *name;
	enum spec_key_type type;
	double lo, hi; /* KEY_INT, KEY_NUMBER: the range */
	unsigned int flags;
	double def; /* the default (KEY_CHOICE: its index) */
	const char *def_text; /* the default in words, if computed */
	unsigned int engines;
	const char *choices; /* KEY_CHOICE: "a, b, c"; in index order */
	const char *knob; /* the kernel's knob whose range this is */
	/* the generations that have it ("6.18, 6.19"), and since when; NULL: all */
	const char *kernels;
	const char *since;
	const char *allowed; /* the allowed values in words, if not a range */
	const char *help;
};

/*
 * KEY(name, field in the model's struct spec, field in the host's struct
 * host_spec, row...). A field is FIELD(member) or NO_FIELD; each engine
 * defines both for its own struct (spec.c, host/spec.c), so that a simple
 * key is parsed, defaulted and written back without code of its own. The
 * rows are in the order of the resolved spec.
 */
/* clang-format off */
#define SPEC_KEYS(KEY)							\
	KEY(engine, NO_FIELD, NO_FIELD,					\
	    .type = KEY_STRING, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_ALL, .def_text = "the binary's own",	\
	    .allowed = "native, sim, host: the binary checks it is its own", \
	    .help = "The engine that runs the spec.")			\
	KEY(workload, NO_FIELD, NO_FIELD,				\
	    .type = KEY_STRING, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_ALL, .def_text = "required",		\
	    .allowed = "a workload of the engine (a bad name lists them)", \
	    .help = "The workload; pcplab-<engine> workloads lists them.")	\
	KEY(tasks, FIELD(tasks), FIELD(tasks),				\
	    .type = KEY_INT, .lo = 1, .hi = SPEC_MAX_TASKS,		\
	    .flags = KEY_OWN_PARSE, .engines = ENGINES_ALL,		\
	    .def_text = "the workload's own (a thread's reproducer: as many " \
			"as the thread ran), else sim: every CPU of the " \
			"machine; host: required",			\
	    .help = "Tasks; each is one model CPU, or one task on the host " \
		    "(sim: at most the machine's CPUs).")		\
	KEY(duration_s, FIELD(duration_s), FIELD(duration_s),		\
	    .type = KEY_NUMBER, .lo = 0.001, .hi = 86400, .def = 5,	\
	    .engines = ENGINES_ALL,					\
	    .help = "Measured seconds.")				\
	KEY(warmup_s, FIELD(warmup_s), FIELD(warmup_s),			\
	    .type = KEY_NUMBER, .lo = 0.001, .hi = 3600,		\
	    .flags = KEY_OR_ZERO | KEY_COMPUTED, .engines = ENGINES_ALL, \
	    .def_text = "min(1, duration_s / 4)",			\
	    .help = "Seconds run before measuring.")			\
	KEY(kernel, NO_FIELD, NO_FIELD,					\
	    .type = KEY_CHOICE, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_MODEL, .def = 2,				\
	    .choices = "4.18, 6.6, 6.18, 6.19", /* generations.c's */	\
	    .help = "The model's kernel generation.")			\
	KEY(batch, FIELD(batch), NO_FIELD,				\
	    .type = KEY_INT, .lo = 1, .hi = 32767,			\
	    .engines = ENGINES_MODEL, .def_text = "zone_batchsize()",	\
	    .help = "Override pcp->batch.")				\
	KEY(high, FIELD(high), NO_FIELD,				\
	    .type = KEY_INT, .lo = 0, .hi = 1 << 30, .def = -1,		\
	    .engines = ENGINES_MODEL, .def_text = "zone_highsize()",	\
	    .help = "Override pcp->high (high_min = high_max = high); "	\
		    "0, or at least the batch.")			\
	KEY(high_fraction, FIELD(high_fraction), FIELD(high_fraction),	\
	    .type = KEY_INT, .lo = 8, .hi = 2147483647,			\
	    .flags = KEY_OR_ZERO, .engines = ENGINES_ALL,		\
	    .knob = "vm.percpu_pagelist_high_fraction",			\
	    .help = "vm.percpu_pagelist_high_fraction (host: the value the " \
		    "front end set for the run).")			\
	KEY(scale_max, FIELD(scale_max), NO_FIELD,			\
	    .type = KEY_INT, .lo = 0, .hi = 6, .def = 5,		\
	    .engines = ENGINES_MODEL, .knob = "pcp_batch_scale_max",	\
	    .kernels = "6.18, 6.19",					\
	    .since = "pcp_batch_scale_max arrived in v6.7",		\
	    .help = "pcp_batch_scale_max.")				\
	KEY(scale_max_schedule, NO_FIELD, NO_FIELD,			\
	    .type = KEY_LIST, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_MODEL, .def_text = "none",		\
	    .allowed = "[[t_s, value], ...]: t_s 0..86400 in time order, " \
		       "value 0..6, at most 32",			\
	    .kernels = "6.18, 6.19",					\
	    .since = "pcp_batch_scale_max arrived in v6.7",		\
	    .help = "Set pcp_batch_scale_max to value at t_s seconds into " \
		    "the measured phase.")				\
	KEY(relinquish, FIELD(relinquish), NO_FIELD,			\
	    .type = KEY_CHOICE, .flags = KEY_COMPUTED,			\
	    .engines = ENGINES_MODEL, .choices = "off, contended, batched", \
	    .def_text = "the generation's",				\
	    .help = "How long free_pcppages_bulk holds zone->lock.")	\
	KEY(policy, NO_FIELD, NO_FIELD,					\
	    .type = KEY_STRING, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_MODEL, .def_text = "default",		\
	    .allowed = "a policy of src/mm/policies (pcplab policies lists them)", \
	    .help = "The PCP policy: who decides refill, drain and high.") \
	KEY(no_free_scaling, FIELD(no_free_scaling), NO_FIELD,		\
	    .type = KEY_BOOL, .engines = ENGINES_MODEL,			\
	    .help = "Do not scale the free batch (the 2023 debug kernel).") \
	KEY(no_alloc_scaling, FIELD(no_alloc_scaling), NO_FIELD,	\
	    .type = KEY_BOOL, .engines = ENGINES_MODEL,			\
	    .kernels = "6.18, 6.19",					\
	    .since = "alloc_factor arrived in v6.7 (c0a242394cb9)",	\
	    .help = "Refill exactly batch (no alloc_factor scaling: "	\
		    "the kernel before c0a242394cb9).")			\
	KEY(config_debug_list, FIELD(config_debug_list), NO_FIELD,	\
	    .type = KEY_BOOL, .engines = ENGINES_MODEL,			\
	    .help = "The kernel was built with CONFIG_DEBUG_LIST: every " \
		    "list_add/list_del calls __list_add_valid_or_report/" \
		    "__list_del_entry_valid_or_report out of line (sim: "	\
		    "charged under the list's lock).")			\
	KEY(task_start, FIELD(start_in_step), NO_FIELD,			\
	    .type = KEY_CHOICE, .engines = ENGINES_MODEL,		\
	    .choices = "staggered, in_step", .def_text = "staggered",	\
	    .help = "How the tasks start: staggered (each task's first " \
		    "iteration maps a random part of its mapping, so the " \
		    "tasks' phases are spread from the start) or in_step " \
		    "(every first iteration whole: will-it-scale's tasks, " \
		    "and the host engine's, leave one barrier together).") \
	KEY(pagevec_size, FIELD(pagevec_size), NO_FIELD,		\
	    .type = KEY_INT, .lo = 1, .hi = FOLIO_BATCH_MAX,		\
	    .flags = KEY_COMPUTED, .engines = ENGINES_MODEL,		\
	    .knob = "PAGEVEC_SIZE",					\
	    .def_text = "the generation's: 15 on 4.18 and 6.6, 31 on 6.18 " \
			"and 6.19 (9cecde80aae0)",			\
	    .help = "PAGEVEC_SIZE, the folio_batch: lru_add's batch and, " \
		    "with folios_put_release, the pages release_pages puts " \
		    "per lru_lock hold and per free_unref_folios() call.") \
	KEY(folios_put_release, FIELD(folios_put_release), NO_FIELD,	\
	    .type = KEY_BOOL, .flags = KEY_COMPUTED,			\
	    .engines = ENGINES_MODEL,					\
	    .def_text = "the generation's: off on 4.18 and 6.6, on on " \
			"6.18 and 6.19",				\
	    .help = "release_pages() frees through folios_put_refs() in " \
		    "folio_batch chunks (99fbb6bfc16f, v6.9); off: it "	\
		    "relocks lru_lock every SWAP_CLUSTER_MAX (32) pages " \
		    "and frees munmap's mmu_gather batch (MAX_GATHER_BATCH, " \
		    "510) after its LRU work.")				\
	KEY(memory_mib, FIELD(memory_mib), NO_FIELD,			\
	    .type = KEY_INT, .lo = 16, .hi = SPEC_MAX_MEMORY_MIB,	\
	    .flags = KEY_COMPUTED, .engines = ENGINES_MODEL,		\
	    .def_text = "MemTotal (sim: the machine's memory)",		\
	    .help = "Managed memory of the model's zones.")		\
	KEY(size_mib, FIELD(size_mib), FIELD(size_mib),			\
	    .type = KEY_INT, .lo = 1, .hi = 1 << 20,			\
	    .flags = KEY_COMPUTED, .engines = ENGINES_ALL,		\
	    .def_text = "the workload's",				\
	    .help = "Per-task mapping size.")				\
	KEY(min_free_kbytes, FIELD(min_free_kbytes), NO_FIELD,		\
	    .type = KEY_INT, .lo = 128, .hi = 1LL << 32,		\
	    .engines = ENGINES_MODEL,					\
	    .def_text = "calculate_min_free_kbytes()",			\
	    .help = "vm.min_free_kbytes of the model.")			\
	KEY(seed, FIELD(seed), NO_FIELD,				\
	    .type = KEY_INT, .lo = 0, .hi = 1LL << 53, .def = 1,	\
	    .engines = ENGINES_MODEL,					\
	    .help = "Random seed.")					\
	KEY(machine, NO_FIELD, NO_FIELD,				\
	    .type = KEY_OBJECT, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_MODEL, .def_text = "none (sim needs one)", \
	    .allowed = "sim only: a machine profile (docs/machines.md)", \
	    .help = "The machine profile the sim engine models.")	\
	KEY(args, NO_FIELD, NO_FIELD,					\
	    .type = KEY_OBJECT, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_MODEL, .def_text = "the workload's",	\
	    .allowed = "the workload's own (its model half reads them)", \
	    .help = "The workload's own arguments.")			\
	KEY(mode, FIELD(threads), FIELD(threads),			\
	    .type = KEY_CHOICE, .engines = ENGINES_ALL,			\
	    .choices = "process, thread",				\
	    .help = "Tasks as processes, or threads of one process.")	\
	KEY(cross_free, FIELD(cross_free), NO_FIELD,			\
	    .type = KEY_BOOL, .engines = ENGINES_MODEL,			\
	    .allowed = "tasks a multiple of cross_free_ratio + 1; a workload that frees what it maps", \
	    .help = "Allocating tasks hand their pages to a freeing task (purge threads).") \
	KEY(cross_free_ratio, FIELD(cross_free_ratio), NO_FIELD,	\
	    .type = KEY_INT, .lo = 1, .hi = 64, .def = 1,		\
	    .engines = ENGINES_MODEL,					\
	    .help = "With cross_free: allocating tasks per freeing task " \
		    "(jemalloc's background purge threads: N to 1).")	\
	KEY(placement, FIELD(spread), FIELD(spread),			\
	    .type = KEY_CHOICE, .engines = ENGINES_ALL,			\
	    .choices = "pinned, spread",				\
	    .def_text = "the workload's own (spread for a thread's unpinned " \
			"loops, else pinned)",				\
	    .help = "pinned: one task per CPU (will-it-scale); spread: " \
		    "unpinned, as the scheduler spreads them.")		\
	KEY(nodes, NO_FIELD, NO_FIELD,					\
	    .type = KEY_LIST, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_MODEL, .def_text = "every node",		\
	    .allowed = "node numbers 0..nodes-1, each once",		\
	    .help = "Place tasks only on these NUMA nodes' CPUs (a cpuset).") \
	KEY(instrument, NO_FIELD, NO_FIELD,				\
	    .type = KEY_STRING, .flags = KEY_OWN_PARSE,			\
	    .engines = ENGINES_MODEL, .def_text = "none",		\
	    .allowed = INSTRUMENT_ALLOWED "; sim only (native runs in real " \
		       "time)",						\
	    .help = "How the figures were measured on the kernel: the sim " \
		    "engine charges the instrument's own cost where the " \
		    "traced kernel pays it.")				\
	KEY(trace_s, NO_FIELD, FIELD(trace_s),				\
	    .type = KEY_NUMBER, .lo = 0.001, .hi = 3600,		\
	    .flags = KEY_OR_ZERO, .engines = ENGINE_HOST,		\
	    .help = "Seconds of the traced phase after measuring "	\
		    "(needs sync_fd).")					\
	KEY(timed, NO_FIELD, FIELD(timed),				\
	    .type = KEY_BOOL, .def = 1, .engines = ENGINE_HOST,		\
	    .help = "Time every first touch.")				\
	KEY(sync_fd, NO_FIELD, FIELD(sync_fd),				\
	    .type = KEY_INT, .lo = 0, .hi = 65535, .def = -1,		\
	    .flags = KEY_INTERNAL, .engines = ENGINE_HOST,		\
	    .def_text = "none",						\
	    .help = "A socket inherited from the front end for the phase " \
		    "handshake.")
/* clang-format on */

/* The index of each key in spec_keys[]: SPEC_KEY_tasks, ... */
#define SPEC_KEY_ID(name, model, host, ...) SPEC_KEY_##name,
enum spec_key_id { SPEC_KEYS(SPEC_KEY_ID) NR_SPEC_KEYS };
#undef SPEC_KEY_ID

extern const struct spec_key spec_keys[NR_SPEC_KEYS];

/* Where an engine's spec holds a key's value: offset and size. */
struct spec_field {
	size_t offset, size;
};

/* For the field columns of SPEC_KEYS, in the engine's @type of spec. */
/* clang-format off */
#define SPEC_FIELD(type, member) \
	{ offsetof(type, member), sizeof(((type *)0)->member) }
#define NO_FIELD { 0, 0 }
/* clang-format on */

/* Refuse a key no row names, or whose row @engine does not take. */
int spec_keys_check(const cJSON *o, unsigned int engine, char *err);
/*
 * Refuse what cJSON takes silently in request @o parsed from @text: a key
 * given twice in one object (cJSON keeps both, lookups see the first) and
 * a NUL (\u0000) in a string (C sees the string end there).
 */
int spec_json_check(const cJSON *o, const char *text, char *err);
/* @key's value in @o, NULL when absent or null. */
const cJSON *spec_key_value(const cJSON *o, enum spec_key_id key);
/*
 * Check every key of @o that is only a field of @spec (@fields: where the
 * engine's spec holds each key) and store it, or its default if absent.
 */
int spec_keys_parse(const cJSON *o, const struct spec_field *fields, void *spec,
		    char *err);
/* Check integer @key is within lo..@hi; leave @out alone if absent. */
int spec_key_int(const cJSON *o, enum spec_key_id key, double hi,
		 long long *out, char *err);
/* "allowed 1..1024", or "<knob> takes 0 or 8..2147483647" */
const char *spec_key_range(enum spec_key_id key, double hi, char *buf,
			   size_t len);
/* Add @key's value in @spec to @o (an int below its range: null). */
void spec_key_write(cJSON *o, enum spec_key_id key,
		    const struct spec_field *fields, const void *spec);
/* Every row, as JSON: the `keys` command of each engine. */
cJSON *spec_keys_json(void);
/* Print spec_keys_json() on stdout; the exit status. */
/* Whether generation @kernel takes key @id (its row's kernels, or all). */
bool spec_key_in_kernel(enum spec_key_id id, const char *kernel);
int spec_keys_main(void);

#endif
