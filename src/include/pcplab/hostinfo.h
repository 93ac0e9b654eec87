/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What engines running on this host need to know of it and report: the CPU
 * model, whether the TSC is invariant and how fast it ticks, and latency
 * histograms as result JSON.
 */
#ifndef PCPLAB_HOSTINFO_H
#define PCPLAB_HOSTINFO_H

#include <cjson/cJSON.h>

#include "histogram.h"

/* lib/cpuinfo.c */
void cpu_model_name(char *buf, size_t len);
bool cpu_has_invariant_tsc(void);
u64 clock_monotonic_ns(void);
bool tsc_calibrate(unsigned int ms, u64 *mult, double *hz);

/* lib/hist_json.c */
cJSON *hist_json(const struct hist *h, bool null_if_empty);
cJSON *host_machine_json(void);

#endif
