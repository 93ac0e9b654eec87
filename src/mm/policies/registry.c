// SPDX-License-Identifier: GPL-2.0
/*
 * The PCP policies, found in their linker section (registry.h): each
 * policies/<name>.c registers itself with DEFINE_PCP_POLICY().
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <pcplab/mm.h>

extern const struct pcp_policy_ops *const __start_pcplab_pcp_policies[];
extern const struct pcp_policy_ops *const __stop_pcplab_pcp_policies[];

/* The policy called @name, or NULL. */
const struct pcp_policy_ops *find_pcp_policy(const char *name)
{
	const struct pcp_policy_ops *const *pos;

	for_each_registry_entry (pos, pcplab_pcp_policies)
		if (!strcmp((*pos)->name, name))
			return *pos;
	return NULL;
}

/* "a, b, c": every policy's name, sorted (the section's order is not). */
const char *pcp_policy_names(void)
{
	static char names[512];
	const struct pcp_policy_ops *const *pos;
	const char *last = "";

	if (names[0])
		return names;
	for (;;) {
		const char *next = NULL;

		for_each_registry_entry (pos, pcplab_pcp_policies)
			if (strcmp((*pos)->name, last) > 0 &&
			    (!next || strcmp((*pos)->name, next) < 0))
				next = (*pos)->name;
		if (!next)
			return names;
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", names[0] ? ", " : "", next);
		last = next;
	}
}

/* The hooks a policy fills, by the kernel decision each replaces. */
static cJSON *policy_decisions(const struct pcp_policy_ops *ops)
{
	cJSON *list = cJSON_CreateArray();
	const struct {
		bool set;
		const char *what;
	} decisions[] = {
		{ ops->nr_alloc, "nr_pcp_alloc" },
		{ ops->refill, "refill (rmqueue_bulk)" },
		{ ops->nr_high, "nr_pcp_high" },
		{ ops->nr_free, "nr_pcp_free" },
		{ ops->zone_locked, "zone->lock found held" },
		{ ops->free_remote, "free to another CPU" },
		{ ops->no_time_decay, "no decay_pcp_high" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(decisions); i++)
		if (decisions[i].set)
			cJSON_AddItemToArray(
				list, cJSON_CreateString(decisions[i].what));
	return list;
}

/* [{name, summary, decides, needs}], sorted by name: the `policies` command. */
cJSON *pcp_policies_json(void)
{
	cJSON *out = cJSON_CreateArray();
	char names[512], *save = NULL;

	snprintf(names, sizeof(names), "%s", pcp_policy_names());
	for (char *name = strtok_r(names, ", ", &save); name;
	     name = strtok_r(NULL, ", ", &save)) {
		const struct pcp_policy_ops *ops = find_pcp_policy(name);
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "name", ops->name);
		cJSON_AddStringToObject(o, "summary", ops->summary);
		cJSON_AddItemToObject(o, "decides", policy_decisions(ops));
		cJSON_AddStringToObject(
			o, "needs",
			ops->needs_high_autotune ? "kernel 6.18+" : "");
		cJSON_AddItemToArray(out, o);
	}
	return out;
}
