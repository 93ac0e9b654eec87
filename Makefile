# pcplab: `make run` sets up and runs the main job; `make test` sets up and
# runs every check. Both work as root on a fresh Debian 12 machine.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= python3
APT_PACKAGES := build-essential cmake ninja-build libck-dev libcjson-dev clang-format \
	libboost-context-dev
# The host engine's kernel tracing (docs/host-engine.md).
APT_PACKAGES += bpftrace
# perf lock record/contention: the host engine's lock contention (linux-perf).
APT_PACKAGES += linux-perf
# The report's index.html is checked in a real browser (tests/test_report_index.py).
APT_PACKAGES += chromium-headless-shell
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
# The console script of the Python that `make setup` installs into; found by
# path so that a version manager's shims need no rehash.
PCPLAB = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/pcplab
C_FILES = $(shell find src bench -name '*.[ch]' 2>/dev/null | sort)
# scripts/ in Python have no .py suffix, which ruff would need to find them
PY_SCRIPTS := $(shell grep -l '^#!/usr/bin/env python3' scripts/*)

.PHONY: setup test run

# Debian packages first (only those missing), then a regular, non-editable
# install: scikit-build-core builds the engines with CMake into pcplab/_bin of
# the installed package. The persistent build/ tree keeps rebuilds incremental.
setup:
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' "$$pkg" 2>/dev/null | grep -q "ok installed" \
			|| missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update; \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	fi
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --root-user-action=ignore ".[test]"

test: setup
	@if [ -n "$(C_FILES)" ]; then \
		echo "clang-format --dry-run --Werror (src/, bench/)"; \
		clang-format --dry-run --Werror $(C_FILES); \
	fi
	$(PYTHON) -m ruff check . $(PY_SCRIPTS)
	$(PYTHON) -m ruff format --check . $(PY_SCRIPTS)
	$(PYTHON) -m pytest -q

run: setup
	$(PCPLAB) pagesets --host
	$(PCPLAB) run --engine native --workload page_fault1 --tasks 2 --duration 5
	$(PCPLAB) reproduce all --quick --out report
