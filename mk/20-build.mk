# Images and host checks (docs/images.md, scripts/build.sh, scripts/doctor.sh).
# Every image name can be overridden, e.g. `make up MONGO_IMAGE=g5tb/ferretdb:1.24.0-1`.
# Default image names from images/defaults.env (their one home); environment and command line win.
$(foreach kv,$(shell grep -E '^[A-Z0-9_]+=' images/defaults.env),$(eval $(firstword $(subst =, ,$(kv))) ?= $(word 2,$(subst =, ,$(kv)))))
export OPEN5GS_IMAGE UERANSIM_IMAGE TOOLS_IMAGE MONGO_IMAGE FERRETDB_IMAGE
# Local trees (optional): OPEN5GS_SRC, UERANSIM_SRC (source), OPEN5GS_INSTALL, UERANSIM_INSTALL,
# FERRETDB_INSTALL (prebuilt install trees); APPLY_PATCHES=0; BUILD_JOBS=N.
export OPEN5GS_SRC UERANSIM_SRC OPEN5GS_INSTALL UERANSIM_INSTALL FERRETDB_INSTALL APPLY_PATCHES BUILD_JOBS
# OpenAirInterface (RAN=oai|split, docs/ran.md): OAI_IMAGE, OAI_SRC, OAI_INSTALL, ASN1C_SRC, SIMDE_SRC, OAI_MARCH
export OAI_IMAGE OAI_SRC OAI_INSTALL ASN1C_SRC SIMDE_SRC OAI_MARCH
IMAGES ?=

.PHONY: build doctor

build: ## build the images (IMAGES="open5gs ueransim tools mongo ferretdb"; OPEN5GS_SRC=/path, OPEN5GS_INSTALL=/path: docs/images.md)
	bash scripts/build.sh $(IMAGES)

doctor: ## check this host: Docker, Compose v2, buildx, SCTP, xfrm ESP, WireGuard, TUN, AVX, disk; what breaks and what to do
	bash scripts/doctor.sh
