# UPF security functions (testbed/secfn/, docs/secfn.md): SECFN x IDS with D-ITG, between
# namespaces (run-secfn-lab; run-overlay with SECFN=...) and in the Docker stack (run-secfn).
.PHONY: run-secfn-lab run-secfn campaign-secfn campaign-secfn-lab

# the experiment's parameters travel like the others' (mk/30-experiments.mk)
EXPERIMENT_VARS += SECFN IDS PROTOCOLS RATES RUNS QUEUE_MAXLEN QUEUES FAIL_OPEN ORDER_SEED VALIDATION_PACKETS SECFN_UNIT

run-secfn-lab: ## UE -> gNB -(PROFILE's N3 overlay)- UPF (NAT, IDS/IPS) -> N6 server in namespaces, D-ITG sweep (SECFN, IDS, RATES, RUNS, DURATION; root)
	@$(call PARAMS_FIRST,secfn-lab,profile) $(EXPERIMENT_ENV) bash scripts/run-secfn-lab.sh

run-secfn: ## the stack with PROFILE's N3 overlay and the UPF as SECFN (NAT/IDS/IPS with IDS=engine), D-ITG from UE 1 to the N6 server (Docker)
	@$(call CHECKS_FIRST,secfn,profile) $(EXPERIMENT_ENV) bash scripts/boots.sh secfn scripts/run-secfn.sh

campaign-secfn: ## run-secfn for every SECFN x IDS unit (PROFILES=units), BOOTS blocks in seeded order, resumable; DRY_RUN=1 prints the plan
	@$(call CHECKS_FIRST,secfn) $(EXPERIMENT_ENV) bash scripts/campaign.sh secfn

campaign-secfn-lab: ## run-secfn-lab for every SECFN x IDS unit between namespaces (PROFILES=units), seeded order, resumable
	@$(call PARAMS_FIRST,secfn-lab) $(EXPERIMENT_ENV) bash scripts/campaign.sh secfn-lab
