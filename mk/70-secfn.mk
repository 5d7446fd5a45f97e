# UPF security functions between namespaces (testbed/secfn/, docs/secfn.md): SECFN x IDS with D-ITG.
.PHONY: run-secfn-lab

run-secfn-lab: ## UE -> UPF (NAT, IDS/IPS engine) -> N6 server in namespaces, D-ITG sweep (SECFN, IDS, RATES, RUNS, DURATION; root)
	$(PYTHON) -m testbed secfn --results "$(RESULTS)" $(if $(CAMPAIGN),--campaign "$(CAMPAIGN)") \
	  $(if $(PROTOCOLS),--protocols "$(PROTOCOLS)") $(if $(RATES),--rates "$(RATES)") \
	  $(if $(RUNS),--runs "$(RUNS)") $(if $(DURATION),--duration "$(DURATION)") \
	  $(if $(QUEUE_MAXLEN),--queue-maxlen "$(QUEUE_MAXLEN)") $(if $(filter 1 yes true,$(FAIL_OPEN)),--fail-open)
