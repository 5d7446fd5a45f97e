#!/usr/bin/env bash
# Bring the project's test cluster up (docs/kubernetes.md "A test cluster"; users bring their own
# cluster, this one is for the project's tests in the full-kernel guest, docs/vm-check.md):
#   up.sh BIN_DIR
# BIN_DIR holds kubectl, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet (v1.34.2
# from the Go module proxy), multus (the thin CNI plugin) and pause (build/pause/linux/pause.c,
# static). From Debian 13: etcd-server, containerd, runc, containernetworking-plugins, openssl,
# and docker (to make the pause image). K8S_NODES=1|2 (default 2), K8S_CLUSTER_DIR (state,
# default /root/k8s/cluster). Idempotent: what runs already is left running. Needs root.
# Prints the admin kubeconfig's path last.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/k8s/cluster/lib.sh
source "$HERE/lib.sh"

SRC="${1:-}"
[[ -n "$SRC" && -d "$SRC" ]] || { sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ "$K8S_NODES" =~ ^[12]$ ]] || die "K8S_NODES=$K8S_NODES: 1 or 2"
[[ "$(id -u)" == 0 ]] || die "needs root (containerd, kubelet, network namespaces)"

# everything checked before anything starts
missing=()
for b in kubectl kube-apiserver kube-controller-manager kube-scheduler kubelet multus pause; do
  [[ -x "$SRC/$b" ]] || missing+=("$SRC/$b")
done
for f in /usr/bin/etcd /usr/bin/containerd /usr/sbin/runc /usr/lib/cni/bridge /usr/lib/cni/host-local \
         /usr/lib/cni/static /usr/lib/cni/macvlan /usr/lib/cni/portmap; do
  [[ -x "$f" ]] || missing+=("$f")
done
for c in openssl ctr systemd-run ip; do command -v "$c" >/dev/null || missing+=("$c"); done
(( ${#missing[@]} == 0 )) || die "missing: ${missing[*]} (etcd-server containerd runc containernetworking-plugins from Debian 13; the rest: docs/kubernetes.md)"

T0="$(date +%s)"
mkdir -p "$BIN" "$CNI_BIN" "$K8S_CLUSTER_DIR/etcd"
chmod 700 "$K8S_CLUSTER_DIR/etcd"
for b in kubectl kube-apiserver kube-controller-manager kube-scheduler kubelet multus pause; do
  cmp -s "$SRC/$b" "$BIN/$b" || install -m 755 "$SRC/$b" "$BIN/$b"
done
for p in /usr/lib/cni/*; do ln -sfn "$p" "$CNI_BIN/$(basename "$p")"; done
ln -sfn "$BIN/multus" "$CNI_BIN/multus"
bash "$HERE/pki.sh" >/dev/null

if [[ ! -f "$K8S_CLUSTER_DIR/pause.tar" ]]; then
  command -v docker >/dev/null || die "docker missing: it builds the pause image (FROM scratch)"
  ctx="$(mktemp -d)"
  cp "$BIN/pause" "$ctx/pause"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
  docker build -q -t "$PAUSE_IMAGE" "$ctx" >/dev/null
  docker save -o "$K8S_CLUSTER_DIR/pause.tar" "$PAUSE_IMAGE"
  rm -rf "$ctx"
  log "pause image $PAUSE_IMAGE built from $SRC/pause"
fi

bash "$HERE/node.sh" link

start_unit "$UNIT-etcd" -- /usr/bin/etcd --name g5tb --data-dir "$K8S_CLUSTER_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-cluster "g5tb=http://127.0.0.1:$((ETCD_PORT + 1))" --unsafe-no-fsync

# --kubelet-preferred-address-types: exec and logs reach a kubelet at its InternalIP; the nodes'
# Hostname (node-a, node-b) resolves nowhere, and `kubectl exec` into the stack's UE failed on it
start_unit "$UNIT-apiserver" -- "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 0.0.0.0 --secure-port "$API_PORT" --advertise-address "$API_ADDR" \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --client-ca-file "$PKI/ca.crt" --authorization-mode Node,RBAC \
  --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
  --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range "$SERVICE_CIDR" \
  --allow-privileged=false --profiling=false --enable-priority-and-fairness=false
wait_for 600 "API server ready" kubectl_admin get --raw /readyz

start_unit "$UNIT-controller-manager" -- "$BIN/kube-controller-manager" \
  --kubeconfig "$K8S_CLUSTER_DIR/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$K8S_CLUSTER_DIR/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$K8S_CLUSTER_DIR/controller-manager.kubeconfig" \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --use-service-account-credentials --leader-elect=false --profiling=false
start_unit "$UNIT-scheduler" -- "$BIN/kube-scheduler" --kubeconfig "$K8S_CLUSTER_DIR/scheduler.kubeconfig" \
  --authentication-kubeconfig "$K8S_CLUSTER_DIR/scheduler.kubeconfig" \
  --authorization-kubeconfig "$K8S_CLUSTER_DIR/scheduler.kubeconfig" --leader-elect=false --profiling=false
kubectl_admin apply -f "$HERE/nad-crd.yaml" >/dev/null

# Every controller the kernel has, enabled for the kubelets' cgroup roots (/$UNIT-<node>): after a
# boot systemd leaves hugetlb off and the kubelet exited at once ("cgroup [...] has some missing
# controllers: hugetlb"; the guest, 2026-11-29).
for c in $(</sys/fs/cgroup/cgroup.controllers); do
  grep -qw "$c" /sys/fs/cgroup/cgroup.subtree_control || echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control
done
for i in $(seq 1 "$K8S_NODES"); do bash "$HERE/node.sh" up "$i"; done
# Ready as its running kubelet reported it: a node's Ready from before a reboot stays in the API
# until its grace period ends, and said Ready for kubelets that had exited (a starting kubelet
# reports its status at once, so its heartbeat is no older than its unit's start).
fresh_ready() {
  local node="$1" got status beat since
  since="$(systemctl show -P ActiveEnterTimestamp "$UNIT-kubelet-$node")" || return 1
  unit_active "$UNIT-kubelet-$node" && [[ -n "$since" ]] || return 1
  got="$(kubectl_admin get node "$node" -o \
    jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}')" \
    || return 1
  read -r status beat <<<"$got"
  [[ "$status" == True && -n "$beat" ]] && (( $(date -d "$beat" +%s) >= $(date -d "$since" +%s) ))
}
for i in $(seq 1 "$K8S_NODES"); do
  wait_for 600 "$(node_name "$i") Ready (reported by its running kubelet)" fresh_ready "$(node_name "$i")"
done
# pods are admitted only once the namespace's default service account exists
wait_for 300 "service account default/default" kubectl_admin -n default get serviceaccount default
log "cluster up in $(( $(date +%s) - T0 )) s: KUBECONFIG=$ADMIN_KUBECONFIG"
echo "$ADMIN_KUBECONFIG"
