/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every engine shares: the run spec (parsed and validated from JSON),
 * the run result, and the entry points each platform provides.
 */
#ifndef PCPLAB_ENGINE_H
#define PCPLAB_ENGINE_H

#include <cjson/cJSON.h>

#include "mm.h"
#include "spec_keys.h"

#define MAX_SCHEDULE 32
#define MAX_SAMPLES 4096
#define ERRLEN SPEC_ERRLEN

/* The run spec; spec_keys.h has its keys, and where each is held here. */
struct spec {
	char engine[16];
	char workload[32];
	int tasks;
	double duration_s;
	double warmup_s;
	const struct kernel_gen *gen;
	int batch; /* 0: computed */
	int high; /* -1: computed */
	int high_fraction;
	int scale_max;
	enum relinquish relinquish;
	const struct pcp_policy_ops *policy;
	bool no_free_scaling;
	bool no_alloc_scaling;
	bool config_debug_list; /* the build's CONFIG_DEBUG_LIST */
	bool start_in_step; /* task_start "in_step": every first iteration whole */
	int pagevec_size; /* lru_batch; absent: the generation's */
	bool folios_put_release; /* absent: the generation's */
	unsigned long memory_mib;
	unsigned long size_mib;
	unsigned long min_free_kbytes; /* 0: computed */
	u64 seed;
	bool threads; /* tasks are threads of one process (mode "thread") */
	bool cross_free; /* allocating tasks hand pages to a freeing one */
	int cross_free_ratio; /* allocating tasks per freeing task */
	u64 node_mask; /* nodes whose CPUs take tasks (a cpuset), bit per node */
	bool spread; /* placement "spread": unpinned, as the scheduler spreads */
	char machine_name[64]; /* sim: the machine profile's name */
	char args_json[512]; /* the workload's args, as given */
	struct instrument instrument; /* how the figures were measured */
	/*
	 * pcp_batch_scale_max changes: entry i sets the knob to value at t_s
	 * seconds into the measured phase (after warmup_s), times not
	 * decreasing; schedule_ns[i] is t_s in ns, as every engine uses it.
	 */
	int nr_schedule;
	struct {
		double t_s;
		int value;
	} schedule[MAX_SCHEDULE];
	u64 schedule_ns[MAX_SCHEDULE];
};

/*
 * One row of the per-step summary: from the step's time to the next one's
 * (the first row, if the schedule starts after 0, runs from the start of
 * measuring with the spec's scale_max).
 */
struct step_result {
	double t_s;
	int scale_max;
	u64 count[2], sum_ns[2]; /* rmqueue_bulk, free_pcppages_bulk */
};

struct run_result {
	double duration_s; /* measured seconds */
	u64 ops; /* ops in the measured window */
	int nr_samples;
	u64 samples[MAX_SAMPLES]; /* ops per one-second sample */
	bool alloc_failed;
	struct cpu_stats total; /* every CPU's stats merged */
	struct invariant_report inv;
	struct invariant_report inv_drained;
	unsigned long memmap_bytes;
	int nr_steps; /* rows of steps[]: none without a schedule */
	struct step_result steps[MAX_SCHEDULE + 1];
};

/* spec.c */
int spec_parse(const char *text, struct spec *spec, char *err);
void spec_apply_policy(const struct spec *spec);
cJSON *spec_to_json(const struct spec *spec);

/* result.c */
cJSON *result_to_json(const struct spec *spec, const struct run_result *r);
cJSON *pagesets_to_json(void);
void merge_cpu_stats(struct cpu_stats *total);
struct task;
void collect_steps(const struct spec *spec, const struct task *tasks,
		   struct run_result *r);
int schedule_value_at(const struct spec *spec, u64 ns);

/* pagesets.c, proptest.c */
int pagesets_main(const char *text, char *err);
int proptest_main(int argc, char **argv);

/* Provided by each platform (src/arch/<name>/engine.c). */
int engine_run(const struct spec *spec, struct run_result *res, char *err);
unsigned long engine_default_memory_mib(void);
unsigned long engine_memory_bytes(const struct spec *spec);
int engine_parse_machine(const cJSON *machine, struct spec *spec, char *err);
int engine_default_tasks(const struct spec *spec);
int engine_max_tasks(const struct spec *spec);
int engine_nr_nodes(void);
cJSON *engine_machine_json(const struct spec *spec);
/* The result's "instrument": what measured, its costs, what they came to. */
cJSON *engine_instrument_json(const struct spec *s, const struct run_result *r);
/* Whether the machine's clear_page() is rep stosb (ERMS). */
bool engine_clear_page_erms(void);
/* The machine is an arm64 one: the kernel functions take arm64's names. */
bool engine_arm64(void);

/* perf_profile.c: the result's perf_profile (the sim engine's). */
cJSON *perf_profile_json(const struct spec *s, const struct run_result *r);

#endif
