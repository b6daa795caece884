#!/bin/bash
# ceph_up.sh - a throwaway single-node radosgw on 127.0.0.1:7480 for the
# agent's S3 archive test (it checks SigV4 signatures, which s3rver does
# not).
#   ceph_up.sh start DIR   (user TESTKEY / TESTSECRET; ~15 s)
#   ceph_up.sh stop DIR
# Needs: radosgw ceph-mon ceph-osd (scripts/deps/agent.test).
set -euo pipefail
cmd=${1:?start|stop}
D=${2:?dir}
C=$D/ceph.conf
if [ "$cmd" = stop ]; then
    for n in client.rgw.a osd.0 mon.a; do
        [ -f "$D/run/$n.pid" ] && kill "$(cat "$D/run/$n.pid")" 2>/dev/null || true
    done
    for n in client.rgw.a osd.0 mon.a; do
        if [ -f "$D/run/$n.pid" ]; then
            p=$(cat "$D/run/$n.pid")
            for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$p" 2>/dev/null || true
        fi
    done
    exit 0
fi
# a cluster that was just stopped (another test) may still hold the fixed
# ports; a new mon/osd would then join the old one ("wrong fsid")
for _ in $(seq 1 100); do
    busy=0
    for port in 6789 7480; do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && busy=1
    done
    [ "$busy" = 0 ] && break
    sleep 0.2
done
rm -rf "$D"; mkdir -p "$D/run" "$D/log" "$D/mon.a" "$D/osd.0" "$D/rgw.a"
FSID=$(cat /proc/sys/kernel/random/uuid)
cat > "$C" <<EOC
[global]
fsid = $FSID
mon host = v1:127.0.0.1:6789
mon initial members = a
public network = 127.0.0.0/8
ms bind ipv6 = false
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
# ceph-mon exits (28) when its data disk has under 5 % free: a shared CI disk
# near full then took every S3 test down (stop 47).  Its data here is a few MB.
mon data avail crit = 0
mon data avail warn = 0
mon max pg per osd = 1000
osd objectstore = memstore
memstore device bytes = 2147483648
mon data = $D/mon.\$id
osd data = $D/osd.\$id
run dir = $D/run
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
log file = $D/log/\$name.log
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:7480
rgw data = $D/rgw.a
EOC
monmaptool --create --clobber --fsid "$FSID" --addv a v1:127.0.0.1:6789 "$D/monmap" >/dev/null
ceph-mon -c "$C" --mkfs -i a --monmap "$D/monmap"
ceph-mon -c "$C" -i a
ceph -c "$C" --connect-timeout 60 osd create >/dev/null
ceph-osd -c "$C" -i 0 --mkfs 2>"$D/log/osd-mkfs.err"
ceph-osd -c "$C" -i 0
# Waited for until a deadline, and a start that misses it fails (so that
# the caller's retry starts afresh): these were 20 s and 30 s windows that
# went on regardless, and on a loaded CI machine radosgw then came up
# after the script had returned 0 (the fleet's bucket PUT failed).
up_by() { # up_by SECONDS WHAT COMMAND...: until COMMAND succeeds
    local secs=$1 what=$2 end=$((SECONDS + $1))
    shift 2
    until "$@"; do
        if [ "$SECONDS" -ge "$end" ]; then
            echo "ceph_up.sh: $what not up after ${secs} s" >&2
            return 1
        fi
        sleep 0.2
    done
}
osd_up() { ceph -c "$C" --connect-timeout 10 osd stat 2>/dev/null | grep -q "1 up"; }
rgw_up() { curl -s -o /dev/null --max-time 5 http://127.0.0.1:7480/; }
up_by 120 osd.0 osd_up
radosgw -c "$C" -n client.rgw.a
up_by 120 radosgw rgw_up
radosgw-admin -c "$C" user create --uid=test --display-name=test \
    --access-key=TESTKEY --secret-key=TESTSECRET >/dev/null
