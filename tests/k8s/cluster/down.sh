#!/usr/bin/env bash
# Take the test cluster down (tests/k8s/cluster/up.sh brought it up):
#   down.sh [--purge]
# Deletes every pod (so each kubelet tears its sandboxes and networks down), stops both nodes,
# the scheduler, the controller manager, the API server and etcd, and removes the link and node 2's
# network namespace. --purge also removes the state (etcd's data, certificates, node dirs) so the
# next up.sh starts from nothing. Idempotent: what is not running is skipped. Needs root.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/k8s/cluster/lib.sh
source "$HERE/lib.sh"

purge=0
case "${1:-}" in
  "") ;;
  --purge) purge=1 ;;
  *) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
[[ "$(id -u)" == 0 ]] || die "needs root"

if unit_active "$UNIT-apiserver" && kubectl_admin get --raw /readyz >/dev/null 2>&1; then
  kubectl_admin delete pods --all --all-namespaces --grace-period=5 --wait=false >/dev/null 2>&1 || true
  for _ in $(seq 90); do
    [[ -z "$(kubectl_admin get pods -A -o name 2>/dev/null)" ]] && break
    sleep 2
  done
fi
for i in 2 1; do bash "$HERE/node.sh" down "$i"; done
for c in scheduler controller-manager apiserver etcd; do
  systemctl stop "$UNIT-$c" 2>/dev/null || true
done
ip link del "$LINK" 2>/dev/null || true
if ip netns list | grep -qw "$NETNS_B"; then ip netns del "$NETNS_B"; fi
ip route del "$POD_PREFIX.1.0/24" 2>/dev/null || true
if (( purge )); then
  rm -rf "$K8S_CLUSTER_DIR/etcd" "$K8S_CLUSTER_DIR/nodes" "$PKI" "$K8S_CLUSTER_DIR"/*.kubeconfig \
    "/var/lib/$UNIT" "/var/log/$UNIT"
  for i in 1 2; do rmdir "/sys/fs/cgroup/$UNIT-$(node_name "$i")" 2>/dev/null || true; done
  log "state removed ($K8S_CLUSTER_DIR keeps bin/, cni-bin/, pause.tar)"
fi
log "cluster down"
