/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Registries without a hand-kept list (the kernel's initcall habit): each
 * entry is a pointer its own file puts in a linker section, and the
 * registry walks the section from __start_<section> to __stop_<section>.
 * Workloads (workload.h) and PCP policies (mmzone.h) are found this way.
 */
#ifndef PCPLAB_REGISTRY_H
#define PCPLAB_REGISTRY_H

#if __has_attribute(retain)
#define __registry_retain __attribute__((retain))
#else
#define __registry_retain
#endif

/*
 * A registry entry: a pointer in linker section @sec. "used" and "retain"
 * keep it through LTO and --gc-sections although no code names it; the
 * registries reference the section through __start_/__stop_.
 */
#define __registry_entry(sec)                                         \
	__attribute__((used, section(#sec), aligned(sizeof(void *)))) \
	__registry_retain

/* Walk registry @sec with @pos, a pointer to its entries' pointers. */
#define for_each_registry_entry(pos, sec) \
	for (pos = __start_##sec; pos < __stop_##sec; pos++)

#endif
