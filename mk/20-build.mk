# Images and host checks (docs/images.md, scripts/build.sh, scripts/doctor.sh).
# Every image name can be overridden, e.g. `make up MONGO_IMAGE=mongo:4.4` (MONGO_IMAGE=ferretdb: the
# FerretDB image built here). Unset, the scripts take the names from images/defaults.env with the
# content hash of each image's build inputs in the tag (scripts/lib/images.sh, testbed/images.py),
# so make sets no default here: an exported default would count as the user's choice.
export OPEN5GS_IMAGE UERANSIM_IMAGE TOOLS_IMAGE MONGO_IMAGE FERRETDB_IMAGE DEBIAN_IMAGE DEBIAN13_IMAGE
# Local trees (optional): OPEN5GS_SRC, UERANSIM_SRC (source), OPEN5GS_INSTALL, UERANSIM_INSTALL,
# FERRETDB_INSTALL (prebuilt install trees); APPLY_PATCHES=0; BUILD_JOBS=N; the tools image's
# STRONGSWAN_SRC, STRONGSWAN_INSTALL, ROSENPASS_INSTALL (scripts/build.sh).
export OPEN5GS_SRC UERANSIM_SRC OPEN5GS_INSTALL UERANSIM_INSTALL FERRETDB_INSTALL APPLY_PATCHES BUILD_JOBS
export STRONGSWAN_SRC STRONGSWAN_INSTALL ROSENPASS_INSTALL
# OpenAirInterface (RAN=oai|split, docs/ran.md): OAI_IMAGE, OAI_SRC, OAI_INSTALL, ASN1C_SRC, SIMDE_SRC, OAI_MARCH
export OAI_IMAGE OAI_SRC OAI_INSTALL ASN1C_SRC SIMDE_SRC OAI_MARCH
IMAGES ?=

.PHONY: build doctor

build: ## build the images, tagged with the hash of their build inputs (IMAGES="open5gs ueransim tools mongo ferretdb"; docs/images.md)
	bash scripts/build.sh $(IMAGES)

doctor: ## check this host: Docker, Compose v2, buildx, SCTP, xfrm ESP, WireGuard, TUN, AVX, disk; what breaks and what to do
	bash scripts/doctor.sh
