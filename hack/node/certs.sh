#!/usr/bin/env bash
# Writes the local node's PKI with openssl into the folder given as $1 (kept
# if already complete): one CA, serving certs for the apiserver and the
# kubelet, client certs for every component, and the service-account key pair.
set -euo pipefail

dir=$1
api_ip=$2
node=$3
mkdir -p "$dir"
cd "$dir"
[ -f done ] && exit 0

days=3650
# ECDSA P-256 keys: as good as RSA here and generated in milliseconds.
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -sha256 -days "$days" -subj "/CN=turnwatch-node-ca" -out ca.crt \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

# cert NAME SUBJECT USAGE [SAN]: a key and a cert signed by the CA.
cert() {
  local name=$1 subj=$2 usage=$3 san=${4:-}
  key "$name.key"
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$usage"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days "$days" \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

cert apiserver "/CN=kube-apiserver" serverAuth \
  "IP:$api_ip,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert kubelet-serving "/CN=system:node:$node/O=system:nodes" serverAuth "DNS:$node,DNS:localhost,IP:127.0.0.1"
cert admin "/CN=turnwatch-admin/O=system:masters" clientAuth
cert kubelet "/CN=system:node:$node/O=system:nodes" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client" clientAuth

key sa.key
openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
chmod 0600 ./*.key
touch done
