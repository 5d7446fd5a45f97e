# 5G security-latency testbed. `make` (or `make help`) lists every target.
# Targets are grouped in mk/*.mk by concern; each documents itself with a `## ` comment.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON  ?= python3
PROFILE ?= baseline
RESULTS ?= results
STATE   ?= .state
export PYTHON PROFILE RESULTS STATE

include $(sort $(wildcard mk/*.mk))

# Variables that look like ours but are not (a typo is silently ignored by make otherwise).
LOOKALIKES := PING:PINGS SET:SETS SIZE:SIZES BOOT:BOOTS ITERATION:ITERATIONS REP:REPS UE:UES PROFILES_:PROFILES \
              INTERVALS:INTERVAL DURATIONS:DURATION TRANSPORT:TRANSPORTS RESULT:RESULTS
$(foreach p,$(LOOKALIKES),$(if $(filter command line,$(origin $(word 1,$(subst :, ,$(p))))),\
  $(warning $(word 1,$(subst :, ,$(p))) is not a variable of this Makefile: did you mean $(word 2,$(subst :, ,$(p)))?)))

.PHONY: help
help: ## list every target with one line each (bold only on a terminal: piped, plain text for grep)
	@if [ -t 1 ]; then b="$$(printf '\033[1m')"; n="$$(printf '\033[0m')"; else b=""; n=""; fi; \
	  awk -v b="$$b" -v n="$$n" 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %s%-18s%s %s\n", b, $$1, n, $$2}' $(MAKEFILE_LIST) | sort
	@echo
	@echo "  Variables: PROFILE=<id> (make profiles), RESULTS=<dir>, see README.md"
