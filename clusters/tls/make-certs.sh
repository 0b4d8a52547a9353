#!/usr/bin/env bash
# Generate a private CA and scheduler, worker and client certificates for a
# Dask cluster with mutual TLS, using only `openssl`.
#
#   ./make-certs.sh OUTDIR [HOST_OR_IP ...]
#
# writes into OUTDIR (created with mode 700 if new):
#   ca.pem ca-key.pem                       the cluster's own CA (keep ca-key.pem secret)
#   scheduler.pem scheduler-key.pem         certificate/key of the scheduler
#   worker.pem worker-key.pem               certificate/key of the workers
#   client.pem client-key.pem               certificate/key of clients (dscir)
#   dask-tls.yaml                           the Dask config of ./dask-tls.yaml with
#                                           absolute paths into OUTDIR
# Every certificate is valid for 825 days, for server and client
# authentication (Dask processes both listen and connect), with subject
# alternative names localhost, 127.0.0.1 and the HOST_OR_IPs given. Dask
# checks the chain to the CA, not host names. Existing files are not
# overwritten: the script stops instead.
set -euo pipefail

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
command -v openssl >/dev/null || { echo "make-certs.sh: openssl is not installed" >&2; exit 1; }
out=$1
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for f in ca.pem ca-key.pem scheduler.pem worker.pem client.pem dask-tls.yaml; do
    if [[ -e $out/$f ]]; then
        echo "make-certs.sh: $out/$f exists; use another OUTDIR or remove it" >&2
        exit 1
    fi
done
[[ -d $out ]] || mkdir -p -m 700 "$out"
out=$(cd "$out" && pwd)
umask 077
days=825

san="DNS:localhost,IP:127.0.0.1"
for h in "$@"; do
    if [[ $h =~ ^[0-9.]+$ || $h == *:* ]]; then san+=",IP:$h"; else san+=",DNS:$h"; fi
done

openssl req -x509 -newkey rsa:3072 -nodes -sha256 -days "$days" \
    -keyout "$out/ca-key.pem" -out "$out/ca.pem" -subj "/CN=dscir dask CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

ext=$(mktemp)
trap 'rm -f "$ext" "$out"/*.csr "$out"/ca.srl' EXIT
cat >"$ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san
EXT

for role in scheduler worker client; do
    openssl req -newkey rsa:3072 -nodes -sha256 -keyout "$out/$role-key.pem" \
        -out "$out/$role.csr" -subj "/CN=dscir dask $role" 2>/dev/null
    openssl x509 -req -in "$out/$role.csr" -CA "$out/ca.pem" -CAkey "$out/ca-key.pem" \
        -CAcreateserial -days "$days" -sha256 -extfile "$ext" -out "$out/$role.pem" 2>/dev/null
    openssl verify -CAfile "$out/ca.pem" "$out/$role.pem" >/dev/null
done
chmod 644 "$out"/ca.pem "$out"/scheduler.pem "$out"/worker.pem "$out"/client.pem

sed "s#: certs/#: $out/#" "$here/dask-tls.yaml" >"$out/dask-tls.yaml"
chmod 644 "$out/dask-tls.yaml"
echo "certificates for $san written to $out"
