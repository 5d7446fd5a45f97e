# Set-up and tests.
.PHONY: setup host-tools setup-roots compose-plugin venv lock test test-kernel profiles

setup: host-tools venv ## install the host tools (Debian/Ubuntu, as root) and the project's Python venv (.venv)

host-tools: ## the host programs (strongSwan, wireguard-go, tshark, Suricata, ...) from apt; as root, idempotent
	@if [ "$$(id -u)" = 0 ]; then \
	   export G5TB_CACHE="$(G5TB_CACHE)"; \
	   SETUP_EXTRA_PACKAGES="$$(python3 -m testbed.open5gs_host packages 2>/dev/null || true)" bash scripts/setup-host.sh \
	   && { python3 -m testbed.open5gs_host status || true; }; \
	 else echo "setup: not root, host packages left as they are (sudo make host-tools installs them; tests that need a missing one skip naming it)"; fi

setup-roots: ## Debian 12 and 13 roots (minbase) in which the tests run host-tools with apt's simulation (root, debootstrap; cached in G5TB_CACHE)
	G5TB_ROOTS="$(G5TB_CACHE)/roots" bash scripts/suite-root.sh tests/scripts/setup_roots/bookworm.env tests/scripts/setup_roots/trixie.env

compose-plugin: ## Docker Compose v2 (pinned in scripts/compose-plugin.sh) built once from the Go module proxy into G5TB_CACHE, installed as the docker CLI plug-in (root: for every user); needs Go >= 1.24
	@G5TB_CACHE="$(G5TB_CACHE)" bash scripts/compose-plugin.sh

venv: $(VENV_STAMP) ## the project's virtual environment from requirements.lock (no network when up to date)

lock: ## regenerate requirements.lock from pyproject.toml's ranges (needs uv: pip install uv)
	uv pip compile pyproject.toml --extra test --extra bench --universal --python-version 3.10 \
	  --generate-hashes -q -o requirements.lock

# Independent tests run at once (pytest-xdist): TEST_JOBS workers, default one per CPU; TEST_JOBS=0
# runs them in one process. Each test file runs on one worker (--dist loadfile): a module's fixtures are
# made once, and tests of one file never meet each other (tests/scheduling.py: files sharing more).
TEST_JOBS ?= auto
test: host-tools venv ## run the test suite in the venv, in parallel; as root also the namespace tests (the rest skip naming what is missing)
	$(PYTHON) -m pytest -ra -n $(TEST_JOBS) --dist loadfile $(PYTEST_ARGS)

test-kernel: host-tools venv ## the kernel tests only (pytest -m kernel: xfrm ESP, kernel WireGuard, MACsec, SCTP, GTP); they skip naming a missing feature; as root where the kernel has them (the full-kernel guest: docs/vm-check.md)
	$(PYTHON) -m pytest -ra -m kernel $(PYTEST_ARGS)

profiles: ## print every security profile with its plane, protocol and parameters
	@$(PYTHON) -m testbed profiles $(if $(PLANE),--plane $(PLANE),) || { rc=$$?; [ $$rc = 141 ] || exit $$rc; }   # 141: the reader stopped early (| head)
