// SPDX-License-Identifier: GPL-2.0
/*
 * The mass exit on the model (workload.c): fault the mapping in, wait for
 * the next tick of the period, unmap. The tick is a multiple of the period
 * on the clock all tasks share (virtual time on sim, the TSC on native),
 * so no task needs to know how many others there are.
 */
#include <stdio.h>

#include <pcplab/model_workload.h>

/* args.period_ms: how often the tasks exit together. */
static u64 period_ns = 20 * 1000000ULL;

static int mass_exit_iteration(struct task *t)
{
	int err = fault_in(t, iteration_pages(t), FAULT_ANON, 1);
	u64 now = now_ns();

	if (!err && !task_should_stop(t))
		delay_ns((now / period_ns + 1) * period_ns - now);
	iteration_unmap(t);
	return err;
}

static int mass_exit_configure(const cJSON *args, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "period_ms");

	period_ns = 20 * 1000000ULL;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 1 ||
	    v->valuedouble > 10000) {
		snprintf(err, 256,
			 "args.period_ms must be a number; allowed 1..10000");
		return -1;
	}
	period_ns = (u64)(v->valuedouble * 1e6);
	return 0;
}

DEFINE_MODEL_WORKLOAD(mass_exit, .iteration = mass_exit_iteration,
		      .configure = mass_exit_configure);
