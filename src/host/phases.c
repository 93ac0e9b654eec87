// SPDX-License-Identifier: GPL-2.0
/*
 * The phases after the start barrier (warm-up, measure, an optional traced
 * phase) and the handshake with the front end over the sync socket: one
 * line per phase change, then wait for its "go", so that the front end can
 * snapshot the kernel or start tracing exactly between two phases. Apart
 * from the sampling, which runs inside each phase.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

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

/* The phases after the start barrier; false if the run must stop. */
bool run_phases(struct harness *h, struct host_run *run, char *err)
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
