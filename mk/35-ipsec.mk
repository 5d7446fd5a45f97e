# IPsec overlay, channel map and the network-namespace lab (docs/overlays/ipsec.md, docs/channels.md).
LAB   ?= lab1
NODES ?=
.PHONY: channels lab-up lab-down lab-list test-ipsec

channels: ## list the SBI host pairs of the channel map with their Open5GS derivation
	$(PYTHON) -m testbed channels --directed

# PLANE defaults to n3 here only (a global default would filter `make profiles` and others).
lab-up: ## namespace lab LAB (default lab1) for PLANE (default n3; n2, n4, sbi, n2,n4,... or all) with PROFILE's overlay [NODES=gnb,upf] (root)
	$(PYTHON) -m testbed lab --name "$(LAB)" --plane "$(or $(PLANE),n3)" --profile "$(PROFILE)" --state "$(STATE)" $(if $(NODES),--nodes "$(NODES)") up

lab-down: ## stop and remove namespace lab LAB (idempotent)
	$(PYTHON) -m testbed lab --name "$(LAB)" --state "$(STATE)" down

lab-list: ## list the namespace labs recorded under $(STATE)/lab
	$(PYTHON) -m testbed lab --state "$(STATE)" list

test-ipsec: ## IPsec render + namespace tests (every start profile on N3 and SBI, N2/N4 and N2+N3+N4; root, ~4 min)
	$(PYTHON) -m pytest -ra tests/ipsec/test_render.py tests/testbed/render/test_compose_overlay.py tests/testbed/test_channels.py tests/testbed/test_planes.py tests/testbed/test_netns.py tests/integration/test_ipsec_netns.py tests/integration/test_planes_netns.py
