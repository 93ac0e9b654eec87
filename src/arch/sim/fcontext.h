/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Boost.Context's fcontext primitives (libboost-context-dev). They are
 * assembly with C linkage, declared in C++ in
 * <boost/context/detail/fcontext.hpp>; these are the same declarations for
 * C callers.
 */
#ifndef PCPLAB_SIM_FCONTEXT_H
#define PCPLAB_SIM_FCONTEXT_H

#include <stddef.h>

typedef void *fcontext_t;

typedef struct {
	fcontext_t fctx; /* the context that jumped to us */
	void *data; /* what it passed */
} transfer_t;

transfer_t jump_fcontext(fcontext_t const to, void *vp);
fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));

#endif
