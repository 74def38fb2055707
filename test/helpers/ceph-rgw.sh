#!/bin/bash
# A one-node Ceph cluster for running the S3 tests against Ceph's RGW
# (docs/scale-out.md "Ceph RGW"): one monitor, one OSD on memstore (in
# memory: no disk), radosgw on 127.0.0.1:7480, no cephx, a user whose keys
# are TESTKEY / TESTSECRET. Everything listens on 127.0.0.1 only.
#
#   apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd ceph-common
#   test/helpers/ceph-rgw.sh start [DIR]   # default DIR /tmp/ceph-rgw-test
#   TEST_S3_ENDPOINT=http://127.0.0.1:7480 TEST_S3_ACCESS_KEY_ID=TESTKEY TEST_S3_SECRET_ACCESS_KEY=TESTSECRET \
#     npx tap test/archive/s3-warcs.test.ts
#   test/helpers/ceph-rgw.sh stop [DIR]
set -euo pipefail
cmd=${1:-}
D=${2:-/tmp/ceph-rgw-test}
stop() {
  local pids=() p pid
  for p in "$D"/run/*.pid; do
    pid=$(cat "$p" 2>/dev/null) && pids+=("$pid")
  done
  [ ${#pids[@]} -eq 0 ] && return 0
  kill "${pids[@]}" 2>/dev/null || true
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  done
}
case "$cmd" in
stop)
  stop
  rm -rf "$D"
  exit 0
  ;;
start) ;;
*)
  echo "usage: $0 start|stop [DIR]" >&2
  exit 2
  ;;
esac
[ -d "$D/run" ] && stop
rm -rf "$D"
mkdir -p "$D"/{mon,osd0,run,log,rgw}
FSID=$(cat /proc/sys/kernel/random/uuid)
cat >"$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon host = v1:127.0.0.1:6789
mon initial members = a
public network = 127.0.0.0/8
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd pool default pg num = 8
osd pool default pgp num = 8
mon max pg per osd = 1000
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 2147483648
ms bind ipv6 = false
run dir = $D/run
log file = $D/log/\$name.log
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
[mon.a]
mon data = $D/mon
[osd.0]
osd data = $D/osd0
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:7480
rgw data = $D/rgw
CONF
C=(-c "$D/ceph.conf")
monmaptool --create --add a v1:127.0.0.1:6789 --fsid "$FSID" "$D/monmap" >/dev/null
ceph-authtool --create-keyring "$D/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-mon "${C[@]}" --mkfs -i a --monmap "$D/monmap" --keyring "$D/mon.keyring"
ceph-mon "${C[@]}" -i a
ceph "${C[@]}" --connect-timeout 30 osd create >/dev/null
ceph-osd "${C[@]}" -i 0 --mkfs 2>/dev/null
ceph-osd "${C[@]}" -i 0 2>/dev/null
for _ in $(seq 60); do ceph "${C[@]}" osd stat 2>/dev/null | grep -q "1 up" && break; sleep 1; done
radosgw "${C[@]}" -n client.rgw.a
for _ in $(seq 120); do curl -s -o /dev/null http://127.0.0.1:7480/ && break; sleep 1; done
radosgw-admin "${C[@]}" user create --uid=test --display-name=test --access-key=TESTKEY --secret=TESTSECRET >/dev/null
echo "RGW on http://127.0.0.1:7480 (keys TESTKEY / TESTSECRET); stop: $0 stop $D"
