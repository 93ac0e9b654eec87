/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-flavoured basic types and helpers, so that model code reads like
 * mm/page_alloc.c: u8..u64, likely(), min/max/clamp, READ_ONCE/WRITE_ONCE.
 */
#ifndef PCPLAB_TYPES_H
#define PCPLAB_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int16_t s16;
typedef int64_t s64;

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define __maybe_unused __attribute__((unused))
#ifndef __always_inline /* glibc's sys/cdefs.h has the same */
#define __always_inline inline __attribute__((always_inline))
#endif
#define ____cacheline_aligned __attribute__((aligned(64)))

#define min(a, b)                       \
	({                              \
		__typeof__(a) _a = (a); \
		__typeof__(b) _b = (b); \
		_a < _b ? _a : _b;      \
	})
#define max(a, b)                       \
	({                              \
		__typeof__(a) _a = (a); \
		__typeof__(b) _b = (b); \
		_a > _b ? _a : _b;      \
	})
#define max3(a, b, c) max(max(a, b), c)
#define clamp(v, lo, hi) min(max(v, lo), hi)
/* Fetch a cache line we are about to write (the kernel's prefetchw()). */
#define prefetchw(p) __builtin_prefetch((p), 1)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))
#define ALIGN(x, a) (((x) + (a)-1) & ~((__typeof__(x))(a)-1))

/* lib/hugemem.c: large zeroed allocations on transparent huge pages */
void *huge_zalloc(size_t size);
void huge_free(void *p, size_t size);

/* Racy single reads and writes of shared knobs, as in the kernel. */
#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

/* A broken model invariant: report where and abort (never silently go on). */
void model_bug(const char *file, int line, const char *cond)
	__attribute__((noreturn));
#define BUG_ON(c)                                          \
	do {                                               \
		if (unlikely(c))                           \
			model_bug(__FILE__, __LINE__, #c); \
	} while (0)
#define VM_BUG_ON(c) BUG_ON(c)

static inline unsigned int ilog2(unsigned long v)
{
	return 63 - __builtin_clzl(v);
}

static inline unsigned long rounddown_pow_of_two(unsigned long v)
{
	return 1UL << ilog2(v);
}

#endif
