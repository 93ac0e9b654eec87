// SPDX-License-Identifier: GPL-2.0
/*
 * stress-ng --vm on the running kernel (workload.c): each worker maps its
 * buffer (plus a PROT_NONE guard page), runs one method pass over it, and
 * unmaps, alternating between two of stress-ng's methods, write64 and
 * zero-one, with stress-ng's own bogo-op accounting (a fine-grained count
 * of method steps, reported >> STRESS_NG_BOGO_SHIFT). Pages are first
 * touched by a sequential write pass, as both methods do.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <pcplab/host_workload.h>

/* The buffer and its guard page. */
static u64 stress_vm_memory(u64 size, int tasks)
{
	return (size + 4096) * (u64)tasks;
}

/* stress-ng's write64: 32 64-bit stores per step; one fine count per step. */
static u64 vm_write64(u64 *buf, size_t size, u64 v)
{
	size_t n = size / (sizeof(*buf) * 32);

	for (size_t i = 0; i < n; i++, buf += 32)
		for (int k = 0; k < 32; k++) {
			buf[k] = v;
			__asm__ __volatile__("" ::: "memory");
		}
	return n;
}

/* stress-ng's zero-one: all zeros, check, all ones, check; size/8 twice. */
static u64 vm_zero_one(u64 *buf, size_t size, u64 *bit_errors)
{
	size_t words = size / sizeof(*buf);

	memset(buf, 0x00, size);
	for (size_t i = 0; i < words; i++)
		*bit_errors += (u64)__builtin_popcountll(buf[i]);
	memset(buf, 0xff, size);
	for (size_t i = 0; i < words; i++)
		*bit_errors += (u64)__builtin_popcountll(~buf[i]);
	return 2 * words;
}

static int stress_vm_iteration(struct host_task *t)
{
	char *c = mmap(NULL, t->size + t->page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	u64 bit_errors = 0, fine = 0;

	if (c == MAP_FAILED)
		return -errno;
	mprotect(c + t->size, t->page_size, PROT_NONE);
	if (touch_pages(t, c, t->size, 0) * t->page_size == t->size) {
		if (t->cycle & 1)
			fine = vm_zero_one((u64 *)c, t->size, &bit_errors);
		else
			fine = vm_write64((u64 *)c, t->size, t->cycle);
	}
	munmap(c, t->size + t->page_size);
	*t->ops += fine;
	return bit_errors ? -EIO : 0;
}

DEFINE_HOST_WORKLOAD(stress_vm, .memory_bytes = stress_vm_memory,
		     .iteration = stress_vm_iteration);
