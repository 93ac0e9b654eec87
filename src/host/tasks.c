// SPDX-License-Identifier: GPL-2.0
/*
 * The harness's tasks, after will-it-scale's main.c: which CPUs they run
 * on (one per core first, then SMT siblings) and their pinning, starting
 * them as processes or threads, the body each runs (setup, the start
 * barrier, iterations until stop), and stopping and reaping them. Kept
 * apart from the sampling and the front-end handshake, which only read
 * the counters these tasks bump.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define STOP_TIMEOUT_S 60 /* a task still running then is killed */

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
int ordered_cpus(int *out)
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
int start_process(struct harness *h, int i, pid_t parent)
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

int start_thread(struct harness *h, int i)
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

/* Wait until every task finished its setup, or one failed. */
bool wait_ready(struct harness *h)
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
void stop_tasks(struct harness *h)
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
