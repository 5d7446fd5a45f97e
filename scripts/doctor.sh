#!/usr/bin/env bash
# Check this host for what the testbed needs; say what each missing piece breaks and what to do.
# `make doctor` runs it. Documentation: docs/images.md ("make doctor").
#
# Kernel facts (SCTP, xfrm ESP, WireGuard, TUN) come from testbed/datapath.py (detect(), the
# same probes as `python -m testbed datapath`), which tries each for real in a throw-away namespace.
#
# Exit: 0 nothing blocks the stack (warnings may remain: userspace fallbacks, missing images),
#       1 at least one FAIL (or, with --strict, at least one WARN), 2 usage error, 130 interrupted.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ENGINE= as the user gave it (the runtime, docs/kubernetes.md): another runtime than the Docker
# host's checks its own place (its plug-in's doctor script), before anything here is worked out.
# ENGINE below is this script's own flag (the Docker engine answered).
RUNTIME="${ENGINE:-}"
if [[ -n "$RUNTIME" ]]; then
  own="$(cd "$TESTBED_ROOT" && "$PYTHON" -m testbed plugins --doctor "$RUNTIME")" \
    || die "ENGINE=$RUNTIME: not a runtime (python -m testbed plugins lists them)" 2
  [[ -z "$own" ]] || exec bash "$own"
fi

DOCKER="${DOCKER:-docker}"
# shellcheck source=scripts/lib/images.sh
source "$TESTBED_ROOT/scripts/lib/images.sh"
load_image_defaults "$TESTBED_ROOT" || exit 1
CPUINFO="${CPUINFO:-/proc/cpuinfo}"
# free space (GiB) where Docker keeps images: below FAIL nothing fits, below WARN a build from source does not
DISK_FAIL_GIB="${DISK_FAIL_GIB:-3}"
DISK_WARN_GIB="${DISK_WARN_GIB:-12}"

FAILS=0
WARNS=0
ENGINE=0
STRICT=0
readonly EVERY_EXPERIMENT="every experiment (make up, run-n3, run-sbi-cold/warm, cpu, throughput)"

usage() {
  cat <<EOF
usage: scripts/doctor.sh [--strict]      (ENGINE=k8s: the cluster's checks instead, docs/kubernetes.md)

Checks: Docker CLI and engine, Compose v2, buildx, kernel SCTP, TUN, xfrm ESP, WireGuard,
NFQUEUE (inline IPS), AVX (MongoDB 5+), free disk, the testbed images. Each problem line says what it breaks
and what to do.

  --strict    exit 1 on warnings too (userspace fallbacks, missing images)
  -h, --help  this text
Variables: DOCKER, OPEN5GS_IMAGE, UERANSIM_IMAGE, TOOLS_IMAGE, MONGO_IMAGE, FERRETDB_IMAGE,
  DISK_FAIL_GIB ($DISK_FAIL_GIB), DISK_WARN_GIB ($DISK_WARN_GIB), PYTHON.
Exit: 0 nothing blocks the stack, 1 something does (see the FAIL lines; --strict: or a WARN),
  2 usage error, 130 interrupted.
EOF
}

# report ok|warn|fail WHAT DETAIL [BREAKS DO]
report() {
  local level="$1" what="$2" detail="$3" breaks="${4:-}" todo="${5:-}" tag
  case "$level" in
    ok) tag="[ ok ]" ;;
    warn) tag="[WARN]"; WARNS=$((WARNS + 1)) ;;
    fail) tag="[FAIL]"; FAILS=$((FAILS + 1)) ;;
    info) tag="[info]" ;;
  esac
  printf '%s %s: %s\n' "$tag" "$what" "$detail"
  [[ -z "$breaks" ]] || printf '       breaks: %s\n' "$breaks"
  [[ -z "$todo" ]] || printf '       do:     %s\n' "$todo"
}

first_line() { head -n 1 | tr -s ' \t' ' '; }
last_line() { grep -v '^[[:space:]]*$' | tail -n 1 | tr -s ' \t' ' '; }

check_docker() {
  local out ver root driver cgroup
  if ! command -v "$DOCKER" >/dev/null 2>&1; then
    report fail "Docker CLI" "'$DOCKER' not found" "$EVERY_EXPERIMENT, make build" \
      "install Docker Engine (https://docs.docker.com/engine/install/) or Debian's docker.io"
    return 0
  fi
  report ok "Docker CLI" "$("$DOCKER" --version 2>&1 | first_line)"
  if out="$("$DOCKER" info --format '{{.ServerVersion}}|{{.DockerRootDir}}|{{.Driver}}|{{.CgroupVersion}}' 2>&1)" \
    && [[ "$out" == *"|"* && "$out" != "|"* ]]; then
    ENGINE=1
    IFS='|' read -r ver root driver cgroup <<<"$out"
    DOCKER_ROOT="$root"
    report ok "Docker engine" "$ver (storage $driver, root $root, cgroup v$cgroup)"
    if [[ "$cgroup" != 2 ]]; then
      report warn "cgroup version" "v$cgroup" \
        "the CPU-time experiment (it reads cgroup v2 cpu.stat usage_usec per container)" \
        "boot with the unified hierarchy (systemd.unified_cgroup_hierarchy=1)"
    fi
  else
    report fail "Docker engine" "not reachable: $(printf '%s\n' "$out" | last_line)" \
      "$EVERY_EXPERIMENT, make build" \
      "start it (\`sudo systemctl start docker\`), run as root or as a member of the docker group, or point DOCKER_HOST at an engine"
  fi
  if out="$("$DOCKER" compose version --short 2>/dev/null)" && [[ "$out" =~ ^v?([0-9]+)\. ]] \
    && ((BASH_REMATCH[1] >= 2)); then
    report ok "Compose v2" "$out"
  else
    report fail "Compose v2" "\`$DOCKER compose\` is not available${out:+ ($out)}" "$EVERY_EXPERIMENT" \
      "install the Compose v2 plugin (docker-compose-plugin from Docker's apt repository, or Debian trixie's docker-compose); the old Python docker-compose v1 is not supported"
  fi
  if out="$("$DOCKER" buildx version 2>/dev/null)"; then
    report ok "buildx (BuildKit)" "$(printf '%s\n' "$out" | first_line)"
  else
    report warn "buildx (BuildKit)" "\`$DOCKER buildx\` is not available" \
      "make build (the Dockerfiles use named build contexts and bind mounts); prebuilt images still run" \
      "install docker-buildx-plugin (Docker's apt repository) or Debian's docker-buildx"
  fi
}

# the probes' facts and each overlay plug-in's notes (testbed/cli/datapath.py --doctor)
datapath_facts() {
  PYTHONPATH="$TESTBED_ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m testbed datapath --doctor
}

check_kernel() {
  local facts key val reason line notes=()
  local -A has=() why=()
  if ! facts="$(datapath_facts 2>&1)"; then
    report fail "kernel probes" "testbed.datapath.detect() failed: $(printf '%s\n' "$facts" | last_line)" \
      "this report: SCTP, TUN, ESP and WireGuard are unknown" "run \`make setup\` (Python package), then \`make doctor\` again"
    return 0
  fi
  while IFS= read -r line; do
    if [[ "$line" == "fact "* ]]; then
      read -r _ key val reason <<<"$line"
      has[$key]="$val"
      why[$key]="$reason"
    else
      notes+=("$line")
    fi
  done <<<"$facts"
  report info "kernel" "${has[kernel]} (probed by testbed/datapath.py)"

  kernel_required sctp "kernel SCTP" "available" \
    "NGAP between gNB and AMF (N2 is SCTP): the gNB cannot connect and no UE attaches: $EVERY_EXPERIMENT" \
    "\`sudo modprobe sctp\` (Ubuntu cloud kernels: install linux-modules-extra-\$(uname -r)); Docker Desktop and WSL2 kernels lack SCTP: use a Linux host or VM"
  kernel_required tun "TUN" "/dev/net/tun works" \
    "the UE's uesimtun and the UPF's ogstun (no PDU session, no user-plane experiment) and the userspace fallbacks kernel-libipsec and wireguard-go" \
    "\`sudo modprobe tun\`; inside a VM or container make /dev/net/tun available"
  # each overlay plug-in with a kernel datapath: `overlay <key>` and its 7 notes (testbed/contract.py DoctorNotes)
  local i
  for ((i = 0; i + 7 < ${#notes[@]}; i += 8)); do
    [[ "${notes[i]}" == "overlay "* ]] || continue
    kernel_or_userspace "${notes[i]#overlay }" "${notes[@]:i+1:7}"
  done
}

# kernel_required KEY NAME OK BREAKS DO: a kernel feature without a fallback: ok or FAIL.
kernel_required() {
  if [[ "${has[$1]}" == yes ]]; then
    report ok "$2" "$3"
  else
    report fail "$2" "not available (${why[$1]})" "$4" "$5"
  fi
}

# kernel_or_userspace KEY NAME OK WARN_BREAKS WARN_DO FALLBACK FAIL_BREAKS FAIL_DO: a kernel
# datapath: ok; missing with TUN: a warning (the userspace fallback runs); missing without: FAIL.
kernel_or_userspace() {
  local key="$1" name="$2"
  if [[ "${has[$key]}" == yes ]]; then
    report ok "$name" "$3"
  elif [[ "${has[tun]}" == yes ]]; then
    report warn "$name" "not available (${why[$key]})" "$4" "$5"
  else
    report fail "$name" "not available (${why[$key]}), and no TUN for $6" "$7" "$8"
  fi
}

# check_nfqueue: the UPF's inline IPS (SECFN=ips-nat) queues packets to userspace; tried for real
# in a throw-away namespace with each front end (testbed/secfn/nfqueue.py).
check_nfqueue() {
  local out name ok why works=() broken=()
  if [[ "$(id -u)" != 0 ]]; then
    report info "NFQUEUE (inline IPS)" "not checked (needs root for a throw-away namespace)"
    return 0
  fi
  if ! out="$(PYTHONPATH="$TESTBED_ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m testbed.secfn.nfqueue 2>&1)"; then
    report warn "NFQUEUE (inline IPS)" "probe failed: $(printf '%s\n' "$out" | last_line)" \
      "SECFN=ips-nat may not work" "run \`make setup\`, then \`make doctor\` again"
    return 0
  fi
  while read -r name ok why; do
    if [[ "$ok" == yes ]]; then works+=("$name"); else broken+=("$name ($why)"); fi
  done <<<"$out"
  if [[ " ${works[*]} " == *" iptables-legacy "* || " ${works[*]} " == *" iptables-nft "* ]]; then
    report ok "NFQUEUE (inline IPS)" "works with ${works[*]}${broken:+; not with ${broken[*]}}"
  else
    report warn "NFQUEUE (inline IPS)" "no front end can queue packets: ${broken[*]}" \
      "SECFN=ips-nat (the inline IPS and the pass-through); nat and ids-nat still run" \
      "\`sudo modprobe nfnetlink_queue xt_NFQUEUE\` and \`apt-get install iptables\` (iptables-legacy has the xtables NFQUEUE target)"
  fi
}

# Does MONGO_IMAGE name an official mongo image of version 5 or later (or an unversioned one)?
mongo_needs_avx() {
  local name="${MONGO_IMAGE##*/}" tag
  [[ "${name%%:*}" == mongo ]] || return 1
  tag="${name#mongo}"
  tag="${tag#:}"
  [[ -z "$tag" || "$tag" == latest ]] && return 0
  [[ "$tag" =~ ^([0-9]+) ]] || return 0
  ((BASH_REMATCH[1] >= 5))
}

check_avx() {
  if grep -qw avx "$CPUINFO" 2>/dev/null; then
    report ok "AVX (MongoDB 5+)" "the CPU has AVX; MONGO_IMAGE=$MONGO_IMAGE can run"
  elif mongo_needs_avx; then
    report fail "AVX (MongoDB 5+)" "the CPU has no AVX and MONGO_IMAGE=$MONGO_IMAGE needs it" \
      "the database: mongod dies with 'Illegal instruction' (exit 132), UDR and PCF exit, no UE attaches: $EVERY_EXPERIMENT" \
      "use MONGO_IMAGE=mongo:4.4, or the MongoDB-compatible FerretDB image built here: MONGO_IMAGE=ferretdb (\`make up\` builds it)"
  else
    report ok "AVX (MongoDB 5+)" "the CPU has no AVX; MONGO_IMAGE=$MONGO_IMAGE does not need it"
  fi
}

# check_cpu_power: what moves timing and CPU figures between runs (recorded in every manifest too).
check_cpu_power() {
  local gov turbo smt
  gov="$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo "not exposed")"
  if [[ -r /sys/devices/system/cpu/intel_pstate/no_turbo ]]; then
    turbo="$([[ "$(cat /sys/devices/system/cpu/intel_pstate/no_turbo)" == 0 ]] && echo on || echo off)"
  elif [[ -r /sys/devices/system/cpu/cpufreq/boost ]]; then
    turbo="$([[ "$(cat /sys/devices/system/cpu/cpufreq/boost)" == 1 ]] && echo on || echo off)"
  else
    turbo="not exposed"
  fi
  smt="$(cat /sys/devices/system/cpu/smt/active 2>/dev/null || echo "not exposed")"
  report info "CPU power" "governor $gov, turbo/boost $turbo, SMT active $smt, CPUs allowed $(nproc)"
  if [[ "$gov" != performance && "$gov" != "not exposed" ]]; then
    report warn "CPU governor" "$gov: the clock follows the load, so latency and CPU time drift with it" \
      "nothing fails; timings vary more between boots" \
      "for measurements: sudo cpupower frequency-set -g performance (and consider turning turbo off)"
  fi
}

check_disk() {
  local path="${DOCKER_ROOT:-}" avail_kib gib
  if [[ -z "$path" || ! -d "$path" ]]; then
    path=/var/lib/docker
    [[ -d "$path" ]] || path=/
  fi
  avail_kib="$(df -Pk "$path" 2>/dev/null | awk 'NR == 2 {print $4}')"
  if [[ -z "$avail_kib" ]]; then
    report warn "free disk" "could not read the free space of $path" "" "check \`df -h $path\`"
    return 0
  fi
  gib=$((avail_kib / 1024 / 1024))
  if ((gib < DISK_FAIL_GIB)); then
    report fail "free disk" "${gib} GiB free on $path (images and captures need at least ${DISK_FAIL_GIB} GiB)" \
      "pulling or building images, captures: $EVERY_EXPERIMENT" \
      "free space there (\`docker system prune\`) or move Docker's data-root"
  elif ((gib < DISK_WARN_GIB)); then
    report warn "free disk" "${gib} GiB free on $path" \
      "building the images from source (build stages need about ${DISK_WARN_GIB} GiB); prebuilt images and runs fit" \
      "free space (\`docker builder prune\`) or build elsewhere and load the images"
  else
    report ok "free disk" "${gib} GiB free on $path"
  fi
}

check_images() {
  local img missing=()
  if ((ENGINE == 0)); then
    report info "images" "not checked (no Docker engine)"
    return 0
  fi
  local ran_image="$UERANSIM_IMAGE"
  [[ "${RAN:-ueransim}" == ueransim ]] || ran_image="$OAI_IMAGE"     # RAN=oai|split (docs/ran.md)
  for img in "$OPEN5GS_IMAGE" "$ran_image" "$TOOLS_IMAGE" "$MONGO_IMAGE"; do
    "$DOCKER" image inspect "$img" >/dev/null 2>&1 || missing+=("$img")
  done
  if ! "$DOCKER" image inspect "$SNORT_IMAGE" >/dev/null 2>&1; then
    report info "snort image" "$SNORT_IMAGE not present: needed only for IDS=snort (\`make build IMAGES=snort\`, docs/secfn.md)"
  fi
  if ((${#missing[@]})); then
    report warn "images" "not present: ${missing[*]}" "make up (it needs them)" \
      "\`make build\` (IMAGES=oai for an OAI RAN; or set OPEN5GS_IMAGE/UERANSIM_IMAGE/OAI_IMAGE/TOOLS_IMAGE/MONGO_IMAGE to images you have)"
  else
    report ok "images" "$OPEN5GS_IMAGE $ran_image $TOOLS_IMAGE $MONGO_IMAGE"
  fi
}

main() {
  while (($#)); do
    case "$1" in
      -h | --help) usage; exit 0 ;;
      --strict) STRICT=1 ;;
      *) die "unknown argument '$1' (see --help)" 2 ;;
    esac
    shift
  done
  local v
  for v in DISK_FAIL_GIB DISK_WARN_GIB; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v='${!v}': must be a whole number of GiB" 2
  done
  trap 'exit 130' INT TERM
  cd "$TESTBED_ROOT"
  echo "testbed doctor: what this host offers the 5G security-latency testbed (docs/images.md)"
  check_docker
  check_kernel
  check_nfqueue
  check_avx
  check_cpu_power
  check_disk
  check_images
  if ((FAILS)); then
    echo "summary: $FAILS failed, $WARNS warnings: the stack cannot run here until the FAIL lines are fixed"
    # every FAIL above concerns the Docker stack: the namespace measurement needs none of it
    echo "without Docker: the N3 overlay measurement runs here between network namespaces:" \
      "\`sudo make run-overlay PROFILE=${PROFILE:-aes256gcm}\` (docs/experiments.md); \`make bench-crypto\` and \`make report\` need no Docker either"
    exit 1
  fi
  if ((WARNS)); then
    echo "summary: 0 failed, $WARNS warnings: the stack can run (see the WARN lines for what differs)"
    ((STRICT == 0)) || exit 1
    exit 0
  fi
  echo "summary: everything the testbed needs is here"
}

main "$@"
