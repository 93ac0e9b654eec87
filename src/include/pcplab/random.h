/* SPDX-License-Identifier: GPL-2.0 */
/* Seedable pseudo-random numbers for reproducible runs. */
#ifndef PCPLAB_RANDOM_H
#define PCPLAB_RANDOM_H

#include "types.h"

struct prandom {
	u64 s[4];
};

void prandom_seed(struct prandom *r, u64 seed);
u64 prandom_u64(struct prandom *r);
u64 prandom_below(struct prandom *r, u64 n);

#endif
