# TLS overlay and Open5GS patches (docs/overlays/tls.md, docs/patches.md).
.PHONY: open5gs-host-build test-tls

open5gs-host-build: ## build the patched Open5GS NFs the namespace tests run (patches/open5gs-host.env) into G5TB_CACHE, where the tests and CI find it (OPEN5GS_SRC; root for the default cache)
	@G5TB_CACHE="$(G5TB_CACHE)" bash patches/build-host.sh

test-tls: ## run the TLS overlay and Open5GS patch tests (Open5GS parts skip without OPEN5GS_BUILD)
	$(PYTHON) -m pytest -ra tests/patches tests/tls/test_render.py tests/integration/test_tls_openssl.py tests/integration/test_tls_open5gs.py tests/integration/test_open5gs_trap_wait.py $(PYTEST_ARGS)
