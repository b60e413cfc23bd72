#!/bin/sh
# `nslookup NAME` in the image named alpine:3.10 (BusyBox's applets; armada-bridge's own), as the
# training operator's PyTorch init container runs it to wait for the master's Service:
#   for i in $(seq 100); do if nslookup MASTER; then err=0 && break; fi; ...; sleep 2; done
# Alpine 3.10's BusyBox 1.30 nslookup exits 0 once a server answers. BusyBox 1.31 and later exit 1
# when any name they ask for is not found, and they ask for NAME in every search domain of
# /etc/resolv.conf, which in a pod always includes some without it: that loop would never end. So,
# for a short NAME, try it in each search domain and then as it is, and exit 0 once one resolves.
# (BUSYBOX and RESOLV_CONF are for tests.)
busybox=${BUSYBOX:-/bin/busybox}
resolv_conf=${RESOLV_CONF:-/etc/resolv.conf}
if [ "$#" -ne 1 ]; then exec "$busybox" nslookup "$@"; fi
case "$1" in
  -* | *.*) exec "$busybox" nslookup "$1" ;;
esac
domains=""
while read -r key rest; do
  case "$key" in search | domain) domains=$rest ;; esac
done < "$resolv_conf"
for domain in $domains; do
  "$busybox" nslookup "$1.$domain" && exit 0
done
exec "$busybox" nslookup "$1."
