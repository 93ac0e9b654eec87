// SPDX-License-Identifier: GPL-2.0
/*
 * `pagesets`: batch, high_min and high_max as the kernel computes them for
 * zones described by their managed pages, low watermark and node CPUs,
 * without building any memory (the same zone_batchsize/zone_highsize code
 * the runs use).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <pcplab/engine.h>

/*
 * A zone as the kernel can have it: managed pages (at least one: a zone
 * without any has no pagesets), a low watermark within them, and the CPUs
 * of its node.
 */
static int zone_reply(const cJSON *zin, cJSON *out, char *err)
{
	const char *keys[] = { "managed_pages", "low_wmark", "cpus" };
	double lo[] = { 1, 0, 1 }, hi[] = { 1e15, 1e15, 65536 }, val[3];
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(zin, "name");
	const cJSON *node = cJSON_GetObjectItemCaseSensitive(zin, "node");
	struct pglist_data pgdat;
	struct zone zone;
	cJSON *z;

	for (int i = 0; i < 3; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(zin, keys[i]);

		if (i == 1)
			hi[1] = val[0]; /* the watermark is some of the pages */
		if (!cJSON_IsNumber(v) ||
		    v->valuedouble != floor(v->valuedouble)) {
			snprintf(
				err, ERRLEN,
				"zone %s must be an integer; allowed %.0f..%.0f",
				keys[i], lo[i], hi[i]);
			return -1;
		}
		if (v->valuedouble < lo[i] || v->valuedouble > hi[i]) {
			snprintf(
				err, ERRLEN,
				"zone %s %.0f is out of range%s; allowed %.0f..%.0f",
				keys[i], v->valuedouble,
				i == 1 && v->valuedouble > hi[1]
					? " (above managed_pages)"
					: "",
				lo[i], hi[i]);
			return -1;
		}
		val[i] = v->valuedouble;
	}
	memset(&pgdat, 0, sizeof(pgdat));
	memset(&zone, 0, sizeof(zone));
	pgdat.nr_cpus = (int)val[2];
	nr_cpu_ids = (int)val[2];
	zone.zone_pgdat = &pgdat;
	zone.managed_pages = (unsigned long)val[0];
	zone._watermark[WMARK_LOW] = (unsigned long)val[1];
	zone.pageset_high_min = zone.pageset_high_max = -1;
	zone_set_pageset_high_and_batch(&zone, 0);

	z = cJSON_CreateObject();
	cJSON_AddNumberToObject(z, "node",
				cJSON_IsNumber(node) ? node->valuedouble : 0);
	cJSON_AddStringToObject(
		z, "name", cJSON_IsString(name) ? name->valuestring : "Normal");
	cJSON_AddNumberToObject(z, "managed_pages", val[0]);
	cJSON_AddNumberToObject(z, "low_wmark", val[1]);
	cJSON_AddNumberToObject(z, "cpus", val[2]);
	cJSON_AddNumberToObject(z, "batch", zone.pageset_batch);
	cJSON_AddNumberToObject(z, "high", zone.pageset_high_min);
	cJSON_AddNumberToObject(z, "high_min", zone.pageset_high_min);
	cJSON_AddNumberToObject(z, "high_max", zone.pageset_high_max);
	cJSON_AddItemToArray(out, z);
	return 0;
}

/* Answer a pagesets request (docs/engine-protocol.md). 0, or -1 + @err. */
int pagesets_main(const char *text, char *err)
{
	cJSON *req = cJSON_Parse(text), *reply, *out;
	const cJSON *kernel, *frac, *zones, *zin;
	const struct kernel_gen *gen;
	int ret = -1;

	if (!req || !cJSON_IsObject(req)) {
		snprintf(
			err, ERRLEN,
			"the pagesets request is not a JSON object; give {\"zones\": [...]} as docs/engine-protocol.md says");
		goto out;
	}
	if (spec_json_check(req, text, err))
		goto out;
	kernel = cJSON_GetObjectItemCaseSensitive(req, "kernel");
	if (kernel && !cJSON_IsNull(kernel) && !cJSON_IsString(kernel)) {
		snprintf(err, ERRLEN, "kernel must be a string; known: %s",
			 kernel_gen_names());
		goto out;
	}
	gen = find_kernel_gen(cJSON_IsString(kernel) ? kernel->valuestring
						     : "6.18");
	if (!gen) {
		snprintf(err, ERRLEN, "unknown kernel '%s'; known: %s",
			 kernel->valuestring, kernel_gen_names());
		goto out;
	}
	pcp_policy.gen = *gen;
	frac = cJSON_GetObjectItemCaseSensitive(req, "high_fraction");
	pcp_policy.high_fraction = 0;
	if (frac && !cJSON_IsNull(frac)) {
		if (!cJSON_IsNumber(frac) ||
		    !high_fraction_valid((long long)frac->valuedouble) ||
		    frac->valuedouble != (long long)frac->valuedouble) {
			snprintf(
				err, ERRLEN,
				"high_fraction %g is out of range; vm.percpu_pagelist_high_fraction takes 0 or 8..2147483647",
				cJSON_IsNumber(frac) ? frac->valuedouble : -1);
			goto out;
		}
		pcp_policy.high_fraction = (int)frac->valuedouble;
	}
	zones = cJSON_GetObjectItemCaseSensitive(req, "zones");
	if (!cJSON_IsArray(zones)) {
		snprintf(
			err, ERRLEN,
			"the pagesets request needs a zones list; give {\"zones\": [...]} as docs/engine-protocol.md says");
		goto out;
	}
	reply = cJSON_CreateObject();
	out = cJSON_AddArrayToObject(reply, "zones");
	cJSON_ArrayForEach (zin, zones) {
		if (zone_reply(zin, out, err)) {
			cJSON_Delete(reply);
			goto out;
		}
	}
	{
		char *s = cJSON_PrintUnformatted(reply);

		puts(s);
		cJSON_free(s);
	}
	cJSON_Delete(reply);
	ret = 0;
out:
	cJSON_Delete(req);
	return ret;
}
