// SPDX-License-Identifier: GPL-2.0
/*
 * The PCP policies, found in their linker section (registry.h): each
 * policies/<name>.c registers itself with DEFINE_PCP_POLICY().
 */
#include <stdio.h>
#include <string.h>

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
