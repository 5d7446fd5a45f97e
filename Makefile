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

.PHONY: help
help: ## list every target with one line each
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[1m%-18s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST) | sort
	@echo
	@echo "  Variables: PROFILE=<id> (make profiles), RESULTS=<dir>, see README.md"
