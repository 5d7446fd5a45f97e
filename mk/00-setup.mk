# Set-up and tests.
.PHONY: setup test profiles

setup: ## install the host tools and Python packages the testbed and its tests need (Debian/Ubuntu, root)
	bash scripts/setup-host.sh

test: setup ## run the test suite (unit, static, network-namespace integration; Docker parts skip with a reason)
	$(PYTHON) -m pytest -ra $(PYTEST_ARGS)

profiles: ## print every security profile with its plane, protocol and parameters
	@$(PYTHON) -m testbed profiles $(if $(PLANE),--plane $(PLANE),)
