#!/usr/bin/env bash
# The test cluster's certificates (tests/k8s/cluster/up.sh calls it): a CA, the API server's
# serving cert, client certs for the admin, the controller manager, the scheduler, each kubelet
# (system:node:<name>, group system:nodes: the Node authorizer) and Multus, and the
# service-account key pair. Idempotent: an existing file is kept.
# Usage: pki.sh   (paths from lib.sh: $K8S_CLUSTER_DIR/pki)
set -euo pipefail
# shellcheck source=tests/k8s/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$PKI"
cd "$PKI"
umask 077

if [[ ! -f ca.crt ]]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
    -subj "/CN=g5tb-test-cluster-ca" 2>/dev/null
fi

# cert NAME SUBJECT [SANS]: a key and a certificate signed by the CA
cert() {
  local name="$1" subj="$2" sans="${3:-}" ext
  [[ -f "$name.crt" ]] && return 0
  openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
  ext="$(mktemp)"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n "$sans" ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$sans"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" \
    -days 3650 -extfile "$ext" 2>/dev/null
  rm -f "$ext" "$name.csr"
}

cert apiserver "/CN=kube-apiserver" \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost,IP:127.0.0.1,IP:$API_ADDR,IP:10.96.0.1"
cert admin "/O=system:masters/CN=g5tb-admin"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
# Multus reads pods and NetworkAttachmentDefinitions and writes the network-status annotation;
# in this test cluster it runs as an admin rather than with the ClusterRole of its daemonset
cert multus "/O=system:masters/CN=multus"
for i in 1 2; do
  cert "kubelet-$(node_name "$i")" "/O=system:nodes/CN=system:node:$(node_name "$i")"
done
[[ -f sa.key ]] || openssl genrsa -out sa.key 2048 2>/dev/null
[[ -f sa.pub ]] || openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null

# kubeconfig NAME CERT: a kubeconfig for the API server with that client cert
kubeconfig() {
  local out="$K8S_CLUSTER_DIR/$1.kubeconfig" c="$PKI/$2"
  [[ -f "$out" ]] && return 0
  cat >"$out" <<KC
apiVersion: v1
kind: Config
clusters:
- name: g5tb
  cluster: {certificate-authority: $PKI/ca.crt, server: "https://$API_ADDR:$API_PORT"}
users:
- name: $1
  user: {client-certificate: $c.crt, client-key: $c.key}
contexts:
- name: g5tb
  context: {cluster: g5tb, user: $1}
current-context: g5tb
KC
}
kubeconfig admin admin
kubeconfig controller-manager controller-manager
kubeconfig scheduler scheduler
kubeconfig multus multus
for i in 1 2; do kubeconfig "kubelet-$(node_name "$i")" "kubelet-$(node_name "$i")"; done
echo "$PKI"
