/* SPDX-License-Identifier: GPL-2.0 */
/*
 * clear_page() as the kernel's fault runs it, beside the ways of timing a
 * page clear from user space that miss it (bench/clearpage.c).
 */
#ifndef PCPLAB_BENCH_CLEARPAGE_H
#define PCPLAB_BENCH_CLEARPAGE_H

#include <stddef.h>

/* ns a page, the least of the rounds (bench/clearpage.c says each) */
struct clear_variants {
	double kernel; /* spaced, rep stos, mapped, cold, large page */
	double spaced_4k; /* the same on 4 KiB pages */
	double hot; /* spaced on a page the L2 holds */
	double streaming_memset_4k; /* back to back, glibc memset */
	double streaming_stos_4k; /* back to back, rep stos */
	double streaming_stos_thp; /* back to back, rep stos, large page */
	double faulting; /* first touch: the fault and its clear too */
	size_t buffer_bytes;
	int rounds;
	const char *insn; /* the instruction the kernel's clear_page uses */
};

int clear_page_variants(struct clear_variants *c, size_t bytes);
void print_clear_variants(const struct clear_variants *c);

#endif
