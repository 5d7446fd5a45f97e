# 5G security-latency testbed. `make` (or `make help`) lists every target.
# Targets are grouped in mk/*.mk by concern; each documents itself with a `## ` comment.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

# Python: the project's virtual environment (scripts/venv.sh, from requirements.lock), built or
# updated on first use and whenever the lock changes; never the system Python. PYTHON=/path/to/python
# uses another interpreter as it is (its packages are then yours to provide).
VENV        ?= .venv
VENV_PYTHON ?= python3
PYTHON      ?= $(CURDIR)/$(VENV)/bin/python
PROFILE ?= baseline
RESULTS ?= results
STATE   ?= .state
export PYTHON PROFILE RESULTS STATE

include $(sort $(wildcard mk/*.mk))

# The venv is a makefile make remakes before any target that may run Python (not for `help`):
# up to date = no network, nothing run.
VENV_STAMP := $(VENV)/.installed.mk
ifeq ($(PYTHON),$(CURDIR)/$(VENV)/bin/python)
ifneq ($(filter-out help,$(or $(MAKECMDGOALS),help)),)
include $(VENV_STAMP)
endif
endif
$(VENV_STAMP): requirements.lock scripts/venv.sh
	@bash scripts/venv.sh "$(VENV)" "$(VENV_PYTHON)"
	@echo "# made by scripts/venv.sh from requirements.lock: $$(sha256sum requirements.lock | cut -c1-16)" >"$@"

# Variables that look like ours but are not (a typo is silently ignored by make otherwise).
LOOKALIKES := PING:PINGS SET:SETS SIZE:SIZES BOOT:BOOTS ITERATION:ITERATIONS REP:REPS UE:UES PROFILES_:PROFILES \
              INTERVALS:INTERVAL DURATIONS:DURATION TRANSPORT:TRANSPORTS RESULT:RESULTS
$(foreach p,$(LOOKALIKES),$(if $(filter command line,$(origin $(word 1,$(subst :, ,$(p))))),\
  $(warning $(word 1,$(subst :, ,$(p))) is not a variable of this Makefile: did you mean $(word 2,$(subst :, ,$(p)))?)))

.PHONY: help
# $(STATE) in a description is shown as its value; a reader that stops early (`make help | head`)
# is no error: 141 = a writer ended by SIGPIPE.
help: ## list every target with one line each (bold only on a terminal: piped, plain text for grep)
	@if [ -t 1 ]; then b="$$(printf '\033[1m')"; n="$$(printf '\033[0m')"; else b=""; n=""; fi; \
	  { awk -v b="$$b" -v n="$$n" -v state="$${STATE//&/\\&}" 'BEGIN {FS = ":.*## "} \
	      /^[a-zA-Z0-9_-]+:.*## / {d = $$2; gsub(/\$$\(STATE\)/, state, d); printf "  %s%-18s%s %s\n", b, $$1, n, d}' \
	      $(MAKEFILE_LIST) | sort \
	    && command printf '\n  Variables: PROFILE=<id> (make profiles), RESULTS=<dir>, STATE=<dir> (%s), see README.md\n' "$$STATE"; \
	  } || [ $$? = 141 ]
