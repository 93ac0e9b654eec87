// SPDX-License-Identifier: GPL-2.0
/* What a broken model invariant does: say where, and stop. */
#include <stdio.h>
#include <stdlib.h>

#include <pcplab/types.h>

/* Report the failed condition @cond at @file:@line and abort. */
void model_bug(const char *file, int line, const char *cond)
{
	fprintf(stderr, "pcplab: model bug at %s:%d: %s\n", file, line, cond);
	abort();
}
