// SPDX-License-Identifier: GPL-2.0
/*
 * The machine-repairman check on the model (workload.c): think, take the
 * one shared lock, hold, let go. Run it on a machine without cache-line
 * costs (ideal-queue) for the closed forms to hold.
 */
#include <math.h>
#include <stdio.h>

#include <pcplab/model_workload.h>

static double think_ns = 10000, hold_ns = 1000;
static spinlock_t repair_lock;
static bool repair_lock_ready;

static u64 exp_ns(struct task *t, double mean)
{
	/* 53 random bits in (0, 1] */
	double u = ((double)(prandom_u64(&t->rnd) >> 11) + 1.0) /
		   9007199254740992.0;

	return (u64)llround(-mean * log(u));
}

static int lock_repairman_iteration(struct task *t)
{
	if (!repair_lock_ready) {
		spin_lock_init(&repair_lock, LOCK_TEST);
		repair_lock_ready = true;
	}
	for (int i = 0; i < 8 && !task_should_stop(t); i++) {
		delay_ns(exp_ns(t, think_ns));
		spin_lock(&repair_lock);
		delay_ns(exp_ns(t, hold_ns));
		spin_unlock(&repair_lock);
		WRITE_ONCE(t->ops, t->ops + 1);
		this_cpu_stats()->ops++;
	}
	task_tick(t);
	if (task_should_stop(t))
		task_stats_detach(t);
	return 0;
}

static int lock_repairman_configure(const cJSON *args, char *err)
{
	const char *keys[] = { "think_ns", "hold_ns" };
	double *vals[] = { &think_ns, &hold_ns };

	for (int i = 0; i < 2; i++) {
		const cJSON *v =
			cJSON_GetObjectItemCaseSensitive(args, keys[i]);

		if (!v)
			continue;
		if (!cJSON_IsNumber(v) || v->valuedouble < 1 ||
		    v->valuedouble > 1e12) {
			snprintf(err, 256, "args.%s must be a number 1..1e12",
				 keys[i]);
			return -1;
		}
		*vals[i] = v->valuedouble;
	}
	repair_lock_ready = false;
	return 0;
}

DEFINE_MODEL_WORKLOAD(lock_repairman, .iteration = lock_repairman_iteration,
		      .configure = lock_repairman_configure,
		      .no_cross_free = true); /* it maps nothing */
