# shellcheck shell=bash
# shellcheck disable=SC2034 # the layout is for the scripts that source this file
# Shared by the test cluster's scripts (tests/k8s/cluster/, docs/kubernetes.md "A test cluster"):
# the layout of the state directory, the node table, logging and waiting. Sourced, not run.
#
# A node is a containerd and a kubelet of its own (own socket, root, state, CNI config, kubelet
# root dir, cgroup root, pod log dir); node 1 runs in the guest's network namespace, node 2 in the
# namespace $NETNS_B, joined to the first by the veth pair `k8slink` (the link N3 crosses when the
# UPF and the gNB are placed apart: K8S_CNI=macvlan K8S_MASTER=k8slink).

K8S_CLUSTER_DIR="${K8S_CLUSTER_DIR:-/root/k8s/cluster}"
K8S_NODES="${K8S_NODES:-2}"               # 1 or 2
NETNS_B="${NETNS_B:-g5tb-k8s-b}"
LINK="k8slink"
LINK_PREFIX="10.250.0"                    # node i: $LINK_PREFIX.i/24 on $LINK
POD_PREFIX="10.244"                       # node i: $POD_PREFIX.(i-1).0/24 on its bridge cni0
SERVICE_CIDR="10.96.0.0/16"
ETCD_PORT=2389                            # not Debian's etcd.service ports (2379/2380)
API_PORT="${API_PORT:-6443}"
PAUSE_IMAGE="registry.k8s.io/pause:3.10.1"
UNIT="g5tb-k8s"                           # systemd units: g5tb-k8s-<component>[-<node>]
UNSAFE_SYSCTLS="net.ipv4.ip_forward,net.core.xfrm_larval_drop"   # docs/kubernetes.md "Sysctls"

PKI="$K8S_CLUSTER_DIR/pki"
BIN="$K8S_CLUSTER_DIR/bin"
CNI_BIN="$K8S_CLUSTER_DIR/cni-bin"
ADMIN_KUBECONFIG="$K8S_CLUSTER_DIR/admin.kubeconfig"
API_ADDR="${API_ADDR:-$LINK_PREFIX.1}"     # test_apiserver.py: 127.0.0.1

die() { printf 'error: %s\n' "$*" >&2; exit 1; }
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

node_name() { printf 'node-%s' "$(printf '%s' "abcdefgh" | cut -c"$1")"; }   # 1 -> node-a
node_ip() { printf '%s.%s' "$LINK_PREFIX" "$1"; }
node_dir() { printf '%s/nodes/%s' "$K8S_CLUSTER_DIR" "$(node_name "$1")"; }
node_sock() { printf '/run/%s/%s/containerd.sock' "$UNIT" "$(node_name "$1")"; }
# the network namespace a node's daemons run in ("" = the guest's own)
node_netns() { if [[ "$1" == 1 ]]; then printf ''; else printf '%s' "$NETNS_B"; fi; }
in_node_ns() {
  local ns
  ns="$(node_netns "$1")"; shift
  if [[ -n "$ns" ]]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

kubectl_admin() { "$BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# wait_for SECONDS WHAT CMD...: run CMD every 2 s until it succeeds; die after SECONDS
wait_for() {
  local limit="$1" what="$2" start
  shift 2
  start="$(date +%s)"
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) - start < limit )) || die "$what: not after ${limit} s"
    sleep 2
  done
  log "$what ($(( $(date +%s) - start )) s)"
}

unit_active() { systemctl is-active --quiet "$1"; }

# start_unit NAME [systemd-run properties...] -- CMD...: a transient service, unless it runs already
start_unit() {
  local name="$1" props=()
  shift
  while [[ "$1" != "--" ]]; do props+=("$1"); shift; done
  shift
  if unit_active "$name"; then log "$name runs already"; return 0; fi
  systemctl reset-failed "$name" >/dev/null 2>&1 || true
  systemd-run --quiet --unit="$name" --collect "${props[@]}" "$@"
  log "started $name"
}
