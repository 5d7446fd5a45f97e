# UPF security functions (testbed/secfn/, docs/secfn.md): SECFN x IDS with D-ITG, between
# namespaces (run-secfn-lab; run-overlay with SECFN=...) and in the Docker stack (run-secfn).
.PHONY: run-secfn-lab

# the experiment's parameters travel like the others' (mk/30-experiments.mk)
EXPERIMENT_VARS += SECFN IDS PROTOCOLS RATES RUNS QUEUE_MAXLEN FAIL_OPEN ORDER_SEED VALIDATION_PACKETS SECFN_UNIT

run-secfn-lab: ## UE -> gNB -(PROFILE's N3 overlay)- UPF (NAT, IDS/IPS) -> N6 server in namespaces, D-ITG sweep (SECFN, IDS, RATES, RUNS, DURATION; root)
	@$(EXPERIMENT_ENV) bash scripts/run-secfn-lab.sh
