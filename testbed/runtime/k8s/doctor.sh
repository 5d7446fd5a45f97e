#!/usr/bin/env bash
# `make doctor ENGINE=k8s`: check the cluster as scripts/doctor.sh checks a Docker host (kubectl,
# the cluster, its version, nodes, Multus, the kubelets' unsafe sysctls, kernel modules per node
# through a one-shot node-info pod). The checks are testbed/runtime/k8s/tool.py's; documentation:
# docs/kubernetes.md. Exit 0 nothing blocks the stack, 1 something does (the FAIL lines).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
PYTHON="${PYTHON:-python3}"
if ! command -v "${KUBECTL:-kubectl}" >/dev/null 2>&1; then
  printf '[FAIL] kubectl (%s): not found on PATH: ENGINE=k8s drives a cluster through kubectl; install it and point KUBECONFIG at the cluster (docs/kubernetes.md); nothing was checked or started\n' "${KUBECTL:-kubectl}"
  exit 1
fi
cd "$ROOT"
exec "$PYTHON" -m testbed.runtime.k8s.tool doctor
