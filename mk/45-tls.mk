# TLS overlay and Open5GS patches (docs/overlays/tls.md, docs/patches.md).
.PHONY: open5gs-host-build test-tls

open5gs-host-build: ## build the patched open5gs-nrfd/ausfd on this host for the TLS and trap-wait namespace tests (OPEN5GS_SRC, OPEN5GS_BUILD)
	bash patches/build-host.sh

test-tls: ## run the TLS overlay and Open5GS patch tests (Open5GS parts skip without OPEN5GS_BUILD)
	$(PYTHON) -m pytest -ra tests/patches tests/tls/test_render.py tests/integration/test_tls_openssl.py tests/integration/test_tls_open5gs.py tests/integration/test_open5gs_trap_wait.py $(PYTEST_ARGS)
