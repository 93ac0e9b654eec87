// SPDX-License-Identifier: GPL-2.0
/*
 * What the host halves of the workloads share (host_workload.h), apart
 * from the harness that runs them: their registry, the first-touch loop
 * that times faults, and the file of the file-backed workloads (and its
 * file system, which the result reports). The harness files only start
 * and count them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "clock.h"
#include "harness.h"

extern const struct host_workload *const __start_pcplab_host_workloads[];
extern const struct host_workload *const __stop_pcplab_host_workloads[];

/* The host half of the workload called @name, or NULL if it has none. */
const struct host_workload *host_find_workload(const char *name)
{
	const struct host_workload *const *pos;

	for_each_registry_entry (pos, pcplab_host_workloads)
		if (!strcmp((*pos)->desc->name, name))
			return *pos;
	return NULL;
}

/* will-it-scale's map, touch, unmap (host_workload.h). */
int map_touch_unmap(struct host_task *t, int flags, int fd)
{
	char *c = mmap(NULL, t->size, PROT_READ | PROT_WRITE, flags, fd, 0);

	if (c == MAP_FAILED)
		return -errno;
	touch_pages(t, c, t->size, 0);
	munmap(c, t->size);
	return 0;
}

/* u64 memory_bytes callback: @size bytes per task. */
u64 one_mapping_per_task(u64 size, int tasks)
{
	return size * (u64)tasks;
}

/* First-touch every page of a range (host_workload.h). */
size_t touch_pages(struct host_task *t, char *base, size_t len, char value)
{
	struct host_control *ctl = t->control;
	volatile char *p = base;
	size_t off, n = 0;

	if (t->timed) {
		for (off = 0; off < len; off += t->page_size, n++) {
			u64 c0, c1;

			if (unlikely(READ_ONCE(ctl->stop)))
				break;
			c0 = cycles();
			__asm__ __volatile__("" ::: "memory");
			p[off] = value;
			__asm__ __volatile__("" ::: "memory");
			c1 = cycles();
			hist_record(&t->fault_ns[READ_ONCE(ctl->phase)],
				    cyc2ns(c1 - c0));
			(*t->pages)++;
		}
	} else {
		for (off = 0; off < len; off += t->page_size, n++) {
			if (unlikely(READ_ONCE(ctl->stop)))
				break;
			p[off] = value;
			(*t->pages)++;
		}
	}
	return n;
}

/* The directory of the file-backed workloads' files: $TMPDIR, else /tmp. */
static const char *file_dir(void)
{
	const char *dir = getenv("TMPDIR");

	return dir && *dir ? dir : "/tmp";
}

/* Create, size and unlink the task's file (host_workload.h). */
int host_task_file(struct host_task *t)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/willitscale.XXXXXX", file_dir());
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (ftruncate(fd, (off_t)t->size)) {
		int err = errno;

		close(fd);
		return -err;
	}
	t->fd = fd;
	return 0;
}

/* Name the file system of the file-backed workloads' directory. */
void name_file_fs(char *out, size_t len)
{
	static const struct {
		long magic;
		const char *name;
	} names[] = {
		{ 0xEF53, "ext4" },	   { 0x01021994, "tmpfs" },
		{ 0x58465342, "xfs" },	   { 0x9123683E, "btrfs" },
		{ 0x794c7630, "overlay" }, { 0x6969, "nfs" },
		{ 0x2fc12fc1, "zfs" },	   { 0xF2F52010, "f2fs" },
	};
	struct statfs st;

	snprintf(out, len, "unknown");
	if (statfs(file_dir(), &st))
		return;
	snprintf(out, len, "0x%lx", (long)st.f_type);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if ((long)st.f_type == names[i].magic)
			snprintf(out, len, "%s", names[i].name);
}
