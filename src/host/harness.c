// SPDX-License-Identifier: GPL-2.0
/*
 * The host harness, after will-it-scale's main.c: tasks as processes or
 * threads pinned one per core, a start barrier, a warm-up, per-second
 * samples of per-task counters kept in a MAP_SHARED page, and the phase
 * handshake with the front end (measure, then an optional traced phase).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "host.h"

#define NSEC_PER_SEC 1000000000ULL
#define STOP_TIMEOUT_S 60 /* a task still running then is killed */

volatile sig_atomic_t host_interrupted;

static const struct host_workload *const workloads[] = {
	&host_page_fault1, &host_page_fault2, &host_page_fault3,
	&host_mmap_fill,   &host_stress_vm,
};

/* The workload called @name, or NULL. */
const struct host_workload *host_find_workload(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(workloads); i++)
		if (!strcmp(workloads[i]->name, name))
			return workloads[i];
	return NULL;
}

/* "page_fault1, page_fault2, ..." for error messages. */
const char *host_workload_names(void)
{
	static char names[256];

	if (!names[0])
		for (size_t i = 0; i < ARRAY_SIZE(workloads); i++)
			snprintf(names + strlen(names),
				 sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", workloads[i]->name);
	return names;
}

/* u64 memory_bytes callback: @size bytes per task. */
u64 one_mapping_per_task(u64 size, int tasks)
{
	return size * (u64)tasks;
}

/* First-touch every page of a range (workload.h). */
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

/* Create, size and unlink the task's file (workload.h). */
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
static void name_file_fs(char *out, size_t len)
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

/* Read a small integer sysfs file; -1 if it cannot be read. */
static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Topology key of @cpu: package << 20 | core, or the CPU itself if unknown. */
static long core_key(int cpu)
{
	char path[128];
	int pkg, core;

	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
		 cpu);
	pkg = read_int_file(path);
	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
	core = read_int_file(path);
	if (pkg < 0 || core < 0)
		return -1 - cpu;
	return ((long)pkg << 20) | core;
}

/*
 * The CPUs the engine may run on, one per core first and then their SMT
 * siblings, as will-it-scale binds task i to core i % cores.
 */
static int ordered_cpus(int *out)
{
	cpu_set_t set;
	int all[CPU_SETSIZE], n = 0, k = 0;
	long keys[CPU_SETSIZE];

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set)) {
			keys[n] = core_key(cpu);
			all[n++] = cpu;
		}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			bool first = true;

			for (int j = 0; j < i; j++)
				first &= keys[j] != keys[i];
			if (first == !pass)
				out[k++] = all[i];
		}
	return k;
}

/* Memory shared by the harness and every task (MAP_SHARED for processes). */
struct host_shared {
	struct host_control control;
	int ready; /* tasks that finished their setup */
	int failed; /* set by the first task that fails */
	char error[HOST_ERRLEN];
};

struct harness {
	const struct host_spec *spec;
	struct host_shared *sh;
	char *counters; /* tasks * HOST_COUNTER_STRIDE */
	struct hist *hists; /* tasks * NR_PHASES */
	size_t shared_len;
	struct host_task *tasks;
	pid_t *pids;
	pthread_t *threads;
	int started;
	int start_pipe[2];
	double *prev; /* per-task ops at the last sample */
	double *prev_pages;
};

static volatile u64 *task_counter(struct harness *h, int i, int which)
{
	return (volatile u64 *)(h->counters + (size_t)i * HOST_COUNTER_STRIDE) +
	       which;
}

/* Record the first task failure; later ones are dropped. */
static void task_fail(struct host_shared *sh, const char *what, int err)
{
	if (__atomic_exchange_n(&sh->failed, 1, __ATOMIC_ACQ_REL))
		return;
	snprintf(sh->error, sizeof(sh->error), "%s: %s", what, strerror(err));
	WRITE_ONCE(sh->control.stop, 1);
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

struct task_arg {
	struct harness *h;
	struct host_task *t;
};

/* The body of every task: set up, wait for the start, iterate until stop. */
static void task_body(struct harness *h, struct host_task *t)
{
	const struct host_workload *wl = h->spec->wl;
	char byte;
	int err;

	if (!h->spec->spread) /* will-it-scale pins; unpinned loops do not */
		pin_self(t->cpu);
	if (wl->setup && (err = wl->setup(t))) {
		task_fail(h->sh, "task setup failed", -err);
		__atomic_fetch_add(&h->sh->ready, 1, __ATOMIC_ACQ_REL);
		return;
	}
	__atomic_fetch_add(&h->sh->ready, 1, __ATOMIC_ACQ_REL);
	while (read(h->start_pipe[0], &byte, 1) < 0 && errno == EINTR)
		;
	while (!READ_ONCE(t->control->stop)) {
		err = wl->iteration(t);
		if (err) {
			task_fail(h->sh,
				  err == -EIO ? "bit errors in memory"
					      : "the workload failed",
				  -err);
			break;
		}
		t->cycle++;
	}
	if (t->fd >= 0)
		close(t->fd);
}

static void *thread_main(void *arg)
{
	struct task_arg *a = arg;

	task_body(a->h, a->t);
	free(a);
	return NULL;
}

/* Start task @i as a child process; returns 0 or -errno. */
static int start_process(struct harness *h, int i, pid_t parent)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		close(h->start_pipe[1]);
		if (h->spec->sync_fd >= 0)
			close(h->spec->sync_fd);
		task_body(h, &h->tasks[i]);
		_exit(0);
	}
	h->pids[i] = pid;
	return 0;
}

static int start_thread(struct harness *h, int i)
{
	struct task_arg *a = malloc(sizeof(*a));
	int err;

	if (!a)
		return -ENOMEM;
	a->h = h;
	a->t = &h->tasks[i];
	err = pthread_create(&h->threads[i], NULL, thread_main, a);
	if (err) {
		free(a);
		return -err;
	}
	return 0;
}

static int fail(char *err, const char *fmt, const char *detail)
{
	snprintf(err, HOST_ERRLEN, fmt, detail);
	return -1;
}

/* Sleep until CLOCK_MONOTONIC @deadline_ns; false if the run must stop. */
static bool sleep_until(struct harness *h, u64 deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / NSEC_PER_SEC),
			       .tv_nsec = (long)(deadline_ns % NSEC_PER_SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) {
		if (host_interrupted || READ_ONCE(h->sh->failed))
			return false;
	}
	return !host_interrupted && !READ_ONCE(h->sh->failed);
}

static double task_ops(struct harness *h, int i)
{
	return (double)(*task_counter(h, i, 0) >> h->spec->wl->ops_shift);
}

static double task_pages(struct harness *h, int i)
{
	return (double)*task_counter(h, i, h->spec->wl->ops_are_pages ? 0 : 1);
}

static void snapshot(struct harness *h)
{
	for (int i = 0; i < h->spec->tasks; i++) {
		h->prev[i] = task_ops(h, i);
		h->prev_pages[i] = task_pages(h, i);
	}
}

/*
 * Run one phase of @seconds, sampling every second (the last sample may
 * be shorter); false if the run must stop.
 */
static bool run_phase(struct harness *h, double seconds,
		      struct host_phase_result *r)
{
	int tasks = h->spec->tasks;
	u64 start = mono_ns(), end = start + (u64)(seconds * 1e9), now = start;
	int cap = (int)ceil(seconds) + 1;

	r->samples = calloc((size_t)cap, sizeof(*r->samples));
	if (!r->samples)
		return false;
	snapshot(h);
	for (int k = 1; now < end && r->nr_samples < cap; k++) {
		struct host_sample *s = &r->samples[r->nr_samples++];
		u64 target = min(start + (u64)k * NSEC_PER_SEC, end);
		bool ok = sleep_until(h, target);

		now = mono_ns();
		s->t_s = (double)(now - start) / 1e9;
		s->min = INFINITY;
		for (int i = 0; i < tasks; i++) {
			double ops = task_ops(h, i), pages = task_pages(h, i);
			double d = ops - h->prev[i];

			s->ops += d;
			s->min = fmin(s->min, d);
			s->max = fmax(s->max, d);
			r->pages += pages - h->prev_pages[i];
			h->prev[i] = ops;
			h->prev_pages[i] = pages;
		}
		r->ops += s->ops;
		if (!ok)
			return false;
	}
	r->seconds = (double)(now - start) / 1e9;
	return true;
}

/*
 * Tell the front end about a phase change on the sync socket and wait for
 * its "go"; 0, or -1 with @err set. Without a socket, nothing to do.
 */
static int sync_event(struct harness *h, const char *event, char *err)
{
	int fd = h->spec->sync_fd;
	char line[HOST_ERRLEN], msg[HOST_ERRLEN + 64];
	size_t len = 0;

	if (fd < 0)
		return 0;
	snprintf(line, sizeof(line), "%s\n", event);
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		return fail(err, "cannot write to the front end's socket: %s",
			    strerror(errno));
	while (len < sizeof(line) - 1) {
		ssize_t n = read(fd, line + len, 1);

		if (n < 0 && errno == EINTR) {
			if (host_interrupted)
				return fail(err, "%s", "interrupted");
			continue;
		}
		if (n <= 0)
			return fail(err,
				    "the front end closed its socket at %s",
				    event);
		if (line[len] == '\n')
			break;
		len++;
	}
	line[len] = 0;
	if (strcmp(line, "go")) {
		snprintf(msg, sizeof(msg), "the front end stopped the run: %s",
			 line);
		return fail(err, "%s", msg);
	}
	return 0;
}

/* Wait until every task finished its setup, or one failed. */
static bool wait_ready(struct harness *h)
{
	while (READ_ONCE(h->sh->ready) < h->started) {
		struct timespec nap = { 0, 1000000 };

		if (host_interrupted || READ_ONCE(h->sh->failed))
			return false;
		nanosleep(&nap, NULL);
	}
	return !READ_ONCE(h->sh->failed);
}

/* Stop every task and wait for it (processes are killed if they hang). */
static void stop_tasks(struct harness *h)
{
	WRITE_ONCE(h->sh->control.stop, 1);
	if (h->start_pipe[1] >= 0) {
		close(h->start_pipe
			      [1]); /* releases tasks still at the barrier */
		h->start_pipe[1] = -1;
	}
	for (int i = 0; i < h->started; i++) {
		if (h->spec->threads) {
			pthread_join(h->threads[i], NULL);
			continue;
		}
		for (int waited = 0;; waited++) {
			struct timespec nap = { 0, 10000000 };
			pid_t r = waitpid(h->pids[i], NULL, WNOHANG);

			if (r == h->pids[i] || (r < 0 && errno != EINTR))
				break;
			if (waited == STOP_TIMEOUT_S * 100)
				kill(h->pids[i], SIGKILL);
			nanosleep(&nap, NULL);
		}
	}
}

static int setup_harness(struct harness *h, const struct host_spec *spec,
			 struct host_run *run, char *err)
{
	int tasks = spec->tasks, *order = calloc(CPU_SETSIZE, sizeof(int));
	size_t counters_len = (size_t)tasks * HOST_COUNTER_STRIDE;
	size_t hists_len = (size_t)tasks * NR_PHASES * sizeof(struct hist);
	char *mem;

	h->spec = spec;
	h->start_pipe[0] = h->start_pipe[1] = -1;
	h->shared_len = sizeof(struct host_shared) + counters_len + hists_len;
	h->tasks = calloc((size_t)tasks, sizeof(*h->tasks));
	h->pids = calloc((size_t)tasks, sizeof(*h->pids));
	h->threads = calloc((size_t)tasks, sizeof(*h->threads));
	h->prev = calloc((size_t)tasks, sizeof(double));
	h->prev_pages = calloc((size_t)tasks, sizeof(double));
	run->cpus = calloc((size_t)tasks, sizeof(int));
	if (!order || !h->tasks || !h->pids || !h->threads || !h->prev ||
	    !h->prev_pages || !run->cpus) {
		free(order);
		return fail(err, "%s", "out of memory");
	}
	mem = mmap(NULL, h->shared_len, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		free(order);
		return fail(err, "cannot map the shared counters: %s",
			    strerror(errno));
	}
	h->sh = (struct host_shared *)mem;
	h->counters = mem + sizeof(struct host_shared);
	h->hists = (struct hist *)(h->counters + counters_len);
	h->sh->control.phase = PHASE_WARMUP;
	run->nr_allowed = ordered_cpus(order);
	for (int i = 0; i < tasks; i++) {
		struct host_task *t = &h->tasks[i];

		t->id = i;
		t->cpu = run->nr_allowed ? order[i % run->nr_allowed] : -1;
		t->size = (size_t)(spec->size_mib << 20);
		t->page_size = (size_t)sysconf(_SC_PAGESIZE);
		t->fd = -1;
		t->timed = spec->timed;
		t->ops = task_counter(h, i, 0);
		t->pages = spec->wl->ops_are_pages ? t->ops
						   : task_counter(h, i, 1);
		t->control = &h->sh->control;
		t->fault_ns = &h->hists[(size_t)i * NR_PHASES];
		run->cpus[i] = t->cpu;
	}
	free(order);
	name_file_fs(run->file_fs, sizeof(run->file_fs));
	if (pipe(h->start_pipe))
		return fail(err, "cannot create the start pipe: %s",
			    strerror(errno));
	return 0;
}

static void free_harness(struct harness *h)
{
	if (h->start_pipe[0] >= 0)
		close(h->start_pipe[0]);
	if (h->start_pipe[1] >= 0)
		close(h->start_pipe[1]);
	if (h->sh)
		munmap(h->sh, h->shared_len);
	free(h->tasks);
	free(h->pids);
	free(h->threads);
	free(h->prev);
	free(h->prev_pages);
}

/* The phases after the start barrier; false if the run must stop. */
static bool run_phases(struct harness *h, struct host_run *run, char *err)
{
	const struct host_spec *spec = h->spec;
	struct host_control *ctl = &h->sh->control;

	if (!run_phase(h, spec->warmup_s, &run->phase[PHASE_WARMUP]) ||
	    sync_event(h, "measure-start", err))
		return false;
	WRITE_ONCE(ctl->phase, PHASE_MEASURE);
	if (!run_phase(h, spec->duration_s, &run->phase[PHASE_MEASURE]))
		return false;
	WRITE_ONCE(ctl->phase, PHASE_WARMUP); /* between phases */
	if (sync_event(h, "measure-end", err))
		return false;
	if (spec->trace_s <= 0)
		return true;
	if (sync_event(h, "trace-start", err))
		return false;
	WRITE_ONCE(ctl->phase, PHASE_TRACE);
	if (!run_phase(h, spec->trace_s, &run->phase[PHASE_TRACE]))
		return false;
	WRITE_ONCE(ctl->phase, PHASE_WARMUP);
	return !sync_event(h, "trace-end", err);
}

/* Run the workload (host.h). */
int host_run(const struct host_spec *spec, struct host_run *run, char *err)
{
	struct harness h = { 0 };
	pid_t parent = getpid();
	int ret = -1;

	err[0] = 0;
	if (setup_harness(&h, spec, run, err))
		goto out;
	for (int i = 0; i < spec->tasks; i++) {
		int e = spec->threads ? start_thread(&h, i)
				      : start_process(&h, i, parent);

		if (e) {
			snprintf(err, HOST_ERRLEN, "cannot start task %d: %s",
				 i, strerror(-e));
			goto stop;
		}
		h.started++;
	}
	if (!wait_ready(&h))
		goto stop;
	close(h.start_pipe[1]); /* the start barrier: every task reads EOF */
	h.start_pipe[1] = -1;
	if (run_phases(&h, run, err))
		ret = 0;
stop:
	stop_tasks(&h);
	for (int p = 0; p < NR_PHASES; p++)
		for (int i = 0; i < h.started; i++)
			hist_merge(&run->phase[p].fault_ns,
				   &h.hists[(size_t)i * NR_PHASES + p]);
	if (h.sh && h.sh->failed) {
		snprintf(err, HOST_ERRLEN, "%s", h.sh->error);
		ret = -1;
	} else if (host_interrupted) {
		snprintf(err, HOST_ERRLEN, "interrupted by %s",
			 host_interrupted == SIGINT ? "SIGINT" : "SIGTERM");
		ret = -1;
	} else if (ret && !err[0]) {
		snprintf(err, HOST_ERRLEN, "the run failed");
	}
out:
	free_harness(&h);
	return ret;
}

/* Free what host_run() allocated. */
void host_run_free(struct host_run *run)
{
	for (int p = 0; p < NR_PHASES; p++)
		free(run->phase[p].samples);
	free(run->cpus);
}
