# The 5G stack: render, bring up/down, logs, smoke test, configuration check (docs/stack.md).
# Variables: PROFILE (default baseline), PLANE (n3, sbi, n2, n4, several: n2,n4, or all; default the profile's first plane),
# SCP=1 (indirect communication), UES=N (scaling UEs), SERVICE (logs), image names
# OPEN5GS_IMAGE UERANSIM_IMAGE TOOLS_IMAGE MONGO_IMAGE, MONGO_URI (external database).
.PHONY: render up down logs smoke check-config test-e2e clean

# PLANE only when the user gave it (command line/environment): a makefile default elsewhere must
# not force n3 on an sbi-only profile; without it the profile's first plane is used.
STACK_PLANE = $(if $(filter command line environment environment override,$(origin PLANE)),$(PLANE),)
STACK_ARGS = --profile "$(PROFILE)" $(if $(STACK_PLANE),--plane "$(STACK_PLANE)",)

render: ## render PROFILE's configs into $(STATE)/render/<plane>/<profile>/ and print what will run (starts nothing)
	$(PYTHON) -m testbed render $(STACK_ARGS) --state "$(STATE)" $(if $(filter 1 yes true,$(SCP)),--scp,)

up: ## start the stack for PROFILE; returns once UE 1 has its PDU session (fails with the unhealthy service's log)
	bash scripts/up.sh $(STACK_ARGS) $(if $(filter 1 yes true,$(SCP)),--scp,) $(if $(UES),--ues "$(UES)",)

down: ## stop and remove the stack's containers, networks and volumes
	bash scripts/down.sh $(STACK_ARGS)

logs: ## show the stack's logs (SERVICE=amf for one service, FOLLOW=1 to follow)
	bash scripts/logs.sh $(if $(FOLLOW),--follow,) $(SERVICE)

smoke: ## up, UE 1 attaches, 5 pings from the UE through the UPF to the host, down; prints PASS/FAIL
	bash scripts/smoke.sh $(STACK_ARGS)

check-config: ## check compose files, NF/gNB/UE configs and subscribers for mismatches (file + key)
	$(PYTHON) -m testbed check-config $(STACK_ARGS) --state "$(STATE)" $(if $(filter 1 yes true,$(SCP)),--scp,)

test-e2e: ## Docker host only: build images, up, smoke, down (tests/e2e)
	$(PYTHON) -m pytest -ra tests/e2e $(PYTEST_ARGS)

clean: ## take the stack down if it is up and delete rendered configs ($(STATE)/render; keys are kept)
	-bash scripts/down.sh $(STACK_ARGS) 2>/dev/null
	rm -rf "$(STATE)/render" "$(STATE)/stack.current"
