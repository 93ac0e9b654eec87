// SPDX-License-Identifier: GPL-2.0
/*
 * A latency histogram as result JSON: {count, total, avg, p50, p99, max,
 * log2_hist}, the log2 rows in bcc funclatency's slots ([lo, hi, count],
 * slot 1 = 0..1, slot i = 2^(i-1)..2^i-1, up to the last non-empty one),
 * and the host's identity shared by the engines that run on it.
 */
#include <unistd.h>

#include <pcplab/hostinfo.h>

static cJSON *log2_hist_json(const struct hist *h)
{
	u64 slots[65];
	int top = hist_log2(h, slots);
	cJSON *rows = cJSON_CreateArray();

	for (int i = 1; i <= top; i++) {
		cJSON *row = cJSON_CreateArray();
		double lo = i == 1 ? 0 : (double)(1ULL << (i - 1));
		double hi = i == 64 ? 18446744073709551615.0
				    : (double)((1ULL << i) - 1);

		cJSON_AddItemToArray(row, cJSON_CreateNumber(lo));
		cJSON_AddItemToArray(row, cJSON_CreateNumber(hi));
		cJSON_AddItemToArray(row, cJSON_CreateNumber((double)slots[i]));
		cJSON_AddItemToArray(rows, row);
	}
	return rows;
}

/* The histogram's summary; JSON null for an empty one if asked. */
cJSON *hist_json(const struct hist *h, bool null_if_empty)
{
	cJSON *o;

	if (!h->count && null_if_empty)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)h->count);
	cJSON_AddNumberToObject(o, "total", (double)h->sum);
	cJSON_AddNumberToObject(o, "avg",
				h->count ? (double)(h->sum / h->count) : 0);
	cJSON_AddNumberToObject(o, "p50", (double)hist_percentile(h, 50));
	cJSON_AddNumberToObject(o, "p99", (double)hist_percentile(h, 99));
	cJSON_AddNumberToObject(o, "max", (double)h->max);
	cJSON_AddItemToObject(o, "log2_hist", log2_hist_json(h));
	return o;
}

/* A machine object naming this host: name, CPU model, online CPUs. */
cJSON *host_machine_json(void)
{
	cJSON *o = cJSON_CreateObject();
	char model[256];

	cpu_model_name(model, sizeof(model));
	cJSON_AddStringToObject(o, "name", "host");
	cJSON_AddStringToObject(o, "cpu_model", model);
	cJSON_AddNumberToObject(o, "host_cpus",
				(double)sysconf(_SC_NPROCESSORS_ONLN));
	return o;
}
