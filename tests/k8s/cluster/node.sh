#!/usr/bin/env bash
# One node of the test cluster (tests/k8s/cluster/up.sh, down.sh call it):
#   node.sh up I     its network (node 2: namespace and link), containerd, CNI config, kubelet
#   node.sh link     the link between the nodes (up.sh: node 1's address on it serves the API)
#   node.sh down I   stop its kubelet, its pods' containers, its containerd; remove its network
# I is 1 or 2 (lib.sh: node-a in the guest's namespace, node-b in $NETNS_B). Idempotent.
# The primary network is the bridge plugin (bridge cni0, host-local IPAM, the node's /24 of
# $POD_PREFIX.0.0/16) behind Multus (thin plugin: every further network a pod names in its
# k8s.v1.cni.cncf.io/networks annotation is a NetworkAttachmentDefinition).
set -euo pipefail
# shellcheck source=tests/k8s/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

link_up() {
  # the link exists from node 1 on: the API server advertises node 1's address on it
  ip link show "$LINK" >/dev/null 2>&1 || {
    ip netns list | grep -qw "$NETNS_B" || ip netns add "$NETNS_B"
    ip link add "$LINK" type veth peer name "$LINK-b"
    ip link set "$LINK-b" netns "$NETNS_B"
    ip netns exec "$NETNS_B" ip link set "$LINK-b" name "$LINK"
  }
  ip addr replace "$(node_ip 1)/24" dev "$LINK"
  ip link set "$LINK" up
  ip netns exec "$NETNS_B" ip link set lo up
  ip netns exec "$NETNS_B" ip addr replace "$(node_ip 2)/24" dev "$LINK"
  ip netns exec "$NETNS_B" ip link set "$LINK" up
  # each node routes the other's pod /24 over the link
  ip route replace "$POD_PREFIX.1.0/24" via "$(node_ip 2)" dev "$LINK"
  ip netns exec "$NETNS_B" ip route replace default via "$(node_ip 1)" dev "$LINK"
  ip netns exec "$NETNS_B" sysctl -qw net.ipv4.ip_forward=1
}

write_config() {
  local i="$1" d name sock
  d="$(node_dir "$i")" name="$(node_name "$i")" sock="$(node_sock "$i")"
  mkdir -p "$d/net.d" "$d/containerd" "$(dirname "$sock")" "/var/lib/$UNIT/$name" "/sys/fs/cgroup/$UNIT-$name"
  cat >"$d/containerd.toml" <<TOML
version = 2
root = "/var/lib/$UNIT/$name/containerd"
state = "/run/$UNIT/$name/containerd"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$d/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/$UNIT/$name/opt"
TOML
  # Multus first (containerd takes the first conf file), delegating the pod network to the bridge
  cat >"$d/net.d/00-multus.conf" <<JSON
{"cniVersion": "0.4.0", "name": "multus-cni-network", "type": "multus",
 "kubeconfig": "$K8S_CLUSTER_DIR/multus.kubeconfig",
 "cniDir": "/var/lib/$UNIT/$name/multus",
 "binDir": "$CNI_BIN",
 "delegates": [{"cniVersion": "0.4.0", "name": "pods-$name", "plugins": [
   {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "/var/lib/$UNIT/$name/ipam",
             "ranges": [[{"subnet": "$POD_PREFIX.$((i - 1)).0/24"}]],
             "routes": [{"dst": "0.0.0.0/0"}]}},
   {"type": "portmap", "capabilities": {"portMappings": true}}]}]}
JSON
  # the kubelet: own root, cgroup root and pod log dir, so two on one machine do not collect
  # each other's pods; the unsafe sysctls the stack's pods set (docs/kubernetes.md)
  cat >"$d/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(node_ip "$i")
cgroupDriver: cgroupfs
cgroupRoot: /$UNIT-$name
containerRuntimeEndpoint: unix://$sock
podLogsDir: /var/log/$UNIT/$name/pods
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
allowedUnsafeSysctls: [${UNSAFE_SYSCTLS//,/, }]
failSwapOn: false
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
serializeImagePulls: false
runtimeRequestTimeout: 10m
YAML
}

cmd_up() {
  local i="$1" name d
  name="$(node_name "$i")" d="$(node_dir "$i")"
  [[ -x "$BIN/kubelet" ]] || die "$BIN/kubelet missing: run up.sh BIN_DIR (it copies the binaries)"
  link_up
  write_config "$i"
  local ns in_ns=()
  ns="$(node_netns "$i")"
  # node-b's containerd and kubelet enter only its network namespace. systemd's
  # NetworkNamespacePath= (and `ip netns exec`) also give each a mount namespace of its own: the
  # kubelet's tmpfs volumes (Secrets, memory emptyDirs) were then invisible to containerd, and a
  # pod on node-b saw its Secret volume empty (the IPsec holder: overlay.env missing).
  [[ -n "$ns" ]] && in_ns=(nsenter "--net=/run/netns/$ns" --)
  start_unit "$UNIT-containerd-$name" -p Delegate=yes -p KillMode=process \
    -p LimitNOFILE=1048576 -- "${in_ns[@]}" /usr/bin/containerd --config "$d/containerd.toml"
  wait_for 120 "$name: containerd answers" ctr -a "$(node_sock "$i")" version
  if ! ctr -a "$(node_sock "$i")" -n k8s.io images ls -q | grep -qxF "$PAUSE_IMAGE"; then
    [[ -f "$K8S_CLUSTER_DIR/pause.tar" ]] || die "$K8S_CLUSTER_DIR/pause.tar missing (up.sh makes it)"
    ctr -a "$(node_sock "$i")" -n k8s.io images import "$K8S_CLUSTER_DIR/pause.tar" >/dev/null
    log "$name: imported $PAUSE_IMAGE"
  fi
  start_unit "$UNIT-kubelet-$name" -- "${in_ns[@]}" "$BIN/kubelet" --config "$d/kubelet.yaml" \
    --kubeconfig "$K8S_CLUSTER_DIR/kubelet-$name.kubeconfig" --root-dir "/var/lib/$UNIT/$name/kubelet" \
    --hostname-override "$name" --node-ip "$(node_ip "$i")" \
    --node-labels "testbed/node=$name,testbed/netns=${ns:-host}"
}

cmd_down() {
  local i="$1" name sock ids
  name="$(node_name "$i")" sock="$(node_sock "$i")"
  systemctl stop "$UNIT-kubelet-$name" 2>/dev/null || true
  if [[ -S "$sock" ]]; then
    # the pods' containers outlive the kubelet: kill them through their containerd
    ids="$(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)"
    for id in $ids; do ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in $ids; do ctr -a "$sock" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true; done
  fi
  systemctl stop "$UNIT-containerd-$name" 2>/dev/null || true
  # its shims (KillMode=process left them to end with their containers)
  kill_shims "$sock"
  # volumes the kubelet mounted (secrets, projected tokens) and sandbox network namespaces
  grep -o " /var/lib/$UNIT/$name/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  grep -o " /run/$UNIT/$name/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  log "$name down"
}

# the containerd-shim processes serving this node's socket (their command line names it), by pid
kill_shims() {
  local sock="$1" pid
  for pid in $(pgrep -x containerd-shim-runc-v2 || true); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-address $sock "; then
      kill "$pid" 2>/dev/null || true
    fi
  done
}

case "${1:-}" in
  link) link_up ;;
  up|down) [[ "${2:-}" =~ ^[12]$ ]] || { usage >&2; exit 2; }; "cmd_$1" "$2" ;;
  -h|--help) usage ;;
  *) usage >&2; exit 2 ;;
esac
