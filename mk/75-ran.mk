# The disaggregated RAN (OpenAirInterface CU-CP / CU-UP / DU, RAN=split; monolithic gNB, RAN=oai):
# experimental until shown working on a full-kernel host (docs/ran.md). Every other target takes
# RAN= too (make up RAN=split, make render RAN=oai UU=nea2-nia2).
# Make variables match the drivers' flags; empty = the driver's default (testbed/runparams.py).
.PHONY: run-ran-procedures run-f1u

RAN_VARS := RAN UU REGISTRATIONS GAP SCOPE IPERF
RAN_ENV = $(EXPERIMENT_ENV) $(foreach v,$(RAN_VARS),$(v)="$($(v))")
# as CHECKS_FIRST (mk/30-experiments.mk), with the RAN experiments' own variables in the environment
RAN_CHECKS_FIRST = $(RAN_ENV) $(PYTHON) -m testbed params $(1) --from-env --profile "$(PROFILE)" >/dev/null && $(DOCTOR_FIRST)

run-ran-procedures: ## split RAN: F1 UE Context Setup / E1 Bearer Context Setup per registration (captures on F1-C, E1, N2), REGISTRATIONS per boot, BOOTS boots
	@$(call RAN_CHECKS_FIRST,ran-procedures) $(RAN_ENV) bash scripts/boots.sh ran-procedures scripts/run-ran-procedures.sh

run-f1u: ## OAI RAN: UE-to-UPF pings over F1-U (SCOPE=f1u) or end to end (SCOPE=e2e, RAN=split|oai), then iperf3 (IPERF=0 skips)
	@$(call RAN_CHECKS_FIRST,f1u) $(RAN_ENV) bash scripts/boots.sh f1u scripts/run-f1u.sh
