# Experiments: one driver per measurement (scripts/run-*.sh), campaigns over every profile.
# Make variables match the drivers' flags (SIZES = --sizes); empty = the driver's default
# (testbed/runparams.py holds every default). Docs: docs/experiments.md, docs/manifest.md.
.PHONY: run-n3 run-sbi run-sbi-cold run-sbi-warm run-cpu run-throughput run-overlay \
        campaign campaign-n3 campaign-sbi campaign-overlay experiment-params spec run rerun

# Every experiment parameter (and the campaign knobs), handed to the drivers through the environment.
EXPERIMENT_VARS := CAMPAIGN SLOT UP_TIMEOUT BOOTS CPUSET_STACK CPUSET_TOOLS SIZES SETS PINGS INTERVAL WARMUP PING_DEADLINE MODE \
                   ITERATIONS ATTACH_TIMEOUT RETRIES WARM_GAP UES REPS TRANSPORTS DURATION \
                   UDP_BITRATE STREAMS SEED PROFILES DRY_RUN PLANE
EXPERIMENT_ENV = $(foreach v,$(EXPERIMENT_VARS),$(v)="$($(v))")
# the checks before any Docker driver (images engineer's doctor; skipped with DOCTOR=0, and for
# DRY_RUN=1, which needs none of the host's prerequisites)
DOCTOR ?= 1
DOCTOR_FIRST = $(if $(filter 1,$(DOCTOR)),$(if $(filter 1,$(DRY_RUN)),,$(if $(wildcard scripts/doctor.sh),bash scripts/doctor.sh &&,)),)
# $(call PARAMS_FIRST,EXPERIMENT[,profile]): parameters (PROFILE for its plane, a campaign's
# PROFILES) checked before anything else, so a typo is a usage error (exit 2), one line.
# $(call CHECKS_FIRST,...): the same, then the doctor (never reported as a host problem first).
PARAMS_FIRST = $(EXPERIMENT_ENV) $(PYTHON) -m testbed params $(1) --from-env $(if $(2),--profile "$(PROFILE)") \
               $(if $(PROFILES),--profiles "$(PROFILES)") >/dev/null &&
CHECKS_FIRST = $(PARAMS_FIRST) $(DOCTOR_FIRST)
EXPERIMENTS := n3 sbi cpu throughput overlay

run-n3: ## N3 ping RTT: BOOTS stack boots with PROFILE's N3 overlay, SETS x PINGS pings per size in SIZES from UE 1 to the host
	@$(call CHECKS_FIRST,n3,profile) $(EXPERIMENT_ENV) bash scripts/boots.sh n3 scripts/run-n3.sh

run-sbi: ## attach time, cold (UE 1) and warm (UE 2) (MODE=cold: UE 1 only): ITERATIONS fresh cores, PROFILE on PLANE (sbi; n2,n4,... or all), a capture per plane; NAS=nea2-nia2 fixes the NAS algorithms (docs/nas.md)
	@$(call CHECKS_FIRST,sbi,profile) $(EXPERIMENT_ENV) bash scripts/run-sbi.sh --mode "$(or $(MODE),both)"

run-sbi-cold: ## SBI attach time, cold only: UE 1 on a fresh core, ITERATIONS times
	@$(call CHECKS_FIRST,sbi,profile) $(EXPERIMENT_ENV) bash scripts/run-sbi.sh --mode cold

run-sbi-warm: ## SBI attach time, warm: UE 1 then UE 2 (the warm sample) on a fresh core, ITERATIONS times
	@$(call CHECKS_FIRST,sbi,profile) $(EXPERIMENT_ENV) bash scripts/run-sbi.sh --mode warm

run-cpu: ## CPU time per container (cgroup) from core boot to the last UE's PDU session, for each count in UES, REPS times
	@$(call CHECKS_FIRST,cpu,profile) $(EXPERIMENT_ENV) bash scripts/run-cpu.sh

run-throughput: ## iperf3 TCP and UDP from UE 1 through N3 to the host (throughput, jitter, loss), raw JSON kept
	@$(call CHECKS_FIRST,throughput,profile) $(EXPERIMENT_ENV) bash scripts/boots.sh throughput scripts/run-throughput.sh

run-overlay: ## the N3 ping measurement through PROFILE's overlay between two namespaces: no Docker, seconds (root); SECFN=...: the UPF security function behind it (docs/secfn.md)
	@$(if $(SECFN),$(call PARAMS_FIRST,secfn-lab,profile) $(EXPERIMENT_ENV) bash scripts/run-secfn-lab.sh --small,$(call PARAMS_FIRST,overlay,profile) $(EXPERIMENT_ENV) bash scripts/boots.sh overlay scripts/run-overlay.sh)

spec: ## print the full run spec (every default filled in) of EXPERIMENT=<experiment> with PROFILE and its variables: a file for make run SPEC=
	@$(if $(EXPERIMENT),,echo "error: EXPERIMENT is empty: one of $(EXPERIMENTS) ... (python -m testbed spec --help)" >&2; exit 2;)
	@$(EXPERIMENT_ENV) $(PYTHON) -m testbed spec "$(EXPERIMENT)" --from-env --profile "$(PROFILE)"

run: ## the one run a spec file describes: SPEC=file.yaml (make spec prints one), checked before anything starts
	@DRY_RUN="$(DRY_RUN)" bash scripts/rerun.sh --spec "$(SPEC)"

rerun: ## repeat RUN=<run dir> from the spec its manifest stores, into a new run directory (manifest: rerun_of)
	@DRY_RUN="$(DRY_RUN)" bash scripts/rerun.sh --run "$(RUN)"

campaign: ## a campaign of EXPERIMENT=<n3|sbi|cpu|throughput|overlay> over every profile of its plane (resumable)
	@$(if $(filter $(EXPERIMENTS),$(EXPERIMENT)),,echo "error: EXPERIMENT='$(EXPERIMENT)': set one of $(EXPERIMENTS)" >&2; exit 2;)
	@$(call PARAMS_FIRST,$(EXPERIMENT)) $(if $(filter overlay,$(EXPERIMENT)),,$(DOCTOR_FIRST)) \
	  $(EXPERIMENT_ENV) bash scripts/campaign.sh $(EXPERIMENT)

campaign-n3: ## run-n3 for every N3 profile (baseline included), shuffled, resumable; DRY_RUN=1 prints the plan and its ETA; ENGINE=k8s SHARDS=N: N stacks at once on a cluster
	@$(call CHECKS_FIRST,n3) $(EXPERIMENT_ENV) bash scripts/campaign.sh n3

campaign-sbi: ## run-sbi (cold + warm) for every SBI profile (baseline included), shuffled, resumable; DRY_RUN=1 prints the plan and its ETA
	@$(call CHECKS_FIRST,sbi) $(EXPERIMENT_ENV) MODE="$(or $(MODE),both)" bash scripts/campaign.sh sbi

campaign-overlay: ## run-overlay for every N3 profile in namespaces (no Docker), shuffled, resumable
	@$(call PARAMS_FIRST,overlay) $(EXPERIMENT_ENV) bash scripts/campaign.sh overlay

experiment-params: ## list every experiment parameter with its default (EXPERIMENT=n3|sbi|cpu|throughput|overlay)
	@$(if $(filter-out $(EXPERIMENTS),$(EXPERIMENT)),echo "error: EXPERIMENT='$(EXPERIMENT)': one of $(EXPERIMENTS)" >&2; exit 2;)
	@for e in $(or $(EXPERIMENT),$(EXPERIMENTS)); do echo "$$e:"; $(PYTHON) -m testbed params $$e --format help; done
