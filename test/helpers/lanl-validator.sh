#!/usr/bin/env bash
# Runs LANL's Memento validator (github.com/lanl/memento-validator, unpatched) against this
# repository's daemons on 127.0.0.1: an archive, a capture proxy and a small site, all on free
# ports in a temp folder; one page is captured through the proxy, then the validator's own HTTP
# API (its Flask app, mementoweb/apps/web) checks, with its browser Accept and followLinks=true:
# the capture (type memento), the redirector and the archive's TimeGate (type timegate), both
# TimeMaps (type timemap), and the page through the proxy (type original). Prints every test's
# result and the counts; exits 1 when a check other than the original's datetime negotiation
# fails (docs/testing.md "LANL's Memento validator" says why that one is expected).
#
#   test/helpers/lanl-validator.sh /path/to/memento-validator
#
# Needs Debian's python3-flask python3-dateutil python3-click python3-dotenv
# python3-typing-extensions (the validator's requirements) and curl.
set -euo pipefail
validator=$(cd "${1:?usage: $0 /path/to/memento-validator}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 120); do curl -sf -o /dev/null "$1" && return 0; sleep 0.5; done; echo "not up: $1" >&2; exit 2; }
archive_port=$(free_port) proxy_port=$(free_port) site_port=$(free_port) api_port=$(free_port)

mkdir -p "$work/vhosts" "$work/site"
printf 'listen: 127.0.0.1:%s\ndata_dir: data\narchives:\n  - id: "2025"\n    until: 2026-01-01T00:00:00Z\n  - id: current\n    from: 2026-01-01T00:00:00Z\n' "$archive_port" > "$work/archive.yaml"
printf 'listen: 127.0.0.1:%s\nvhosts: vhosts/\nspool: spool\n' "$proxy_port" > "$work/proxy.yaml"
printf 'server_name: localhost\nserver_aliases: [127.0.0.1]\nUseCanonicalName: On\nupstream: http://127.0.0.1:%s\nArchivePort: %s\n' "$site_port" "$archive_port" > "$work/vhosts/site.yaml"
echo '<html><head><title>A page</title></head><body><p>Captured through the proxy.</p></body></html>' > "$work/site/index.html"

node "$repo/bin/memento-archive.js" --config "$work/archive.yaml" --quiet > "$work/archive.log" 2>&1 & pids+=($!)
(cd "$work/site" && exec /usr/bin/python3 -m http.server "$site_port" --bind 127.0.0.1) > "$work/site.log" 2>&1 & pids+=($!)
wait_for "http://127.0.0.1:$archive_port/healthz"
node "$repo/bin/capture-proxy.js" --config "$work/proxy.yaml" > "$work/proxy.log" 2>&1 & pids+=($!)
wait_for "http://127.0.0.1:$proxy_port/"
original="http://127.0.0.1:$proxy_port/"
uri_r="http://localhost:$proxy_port/"
a="http://127.0.0.1:$archive_port"
for _ in $(seq 60); do curl -sf -o /dev/null "$a/tg/$uri_r" && break; sleep 0.5; done
memento=$(curl -s -o /dev/null -w '%{redirect_url}' "$a/current/timegate/$uri_r")

(cd "$validator" && FLASK_APP=mementoweb/apps/web/server.py exec /usr/bin/python3 -m flask run --host 127.0.0.1 --port "$api_port") > "$work/validator.log" 2>&1 & pids+=($!)
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$api_port/api" && break; sleep 0.5; done

status=0
check() { # TYPE URI
  curl -s -G "http://127.0.0.1:$api_port/api" --data-urlencode "uri=$2" --data-urlencode "type=$1" \
    --data-urlencode "datetime=Sun, 01 Apr 2010 12:00:00 GMT" --data-urlencode followLinks=true --data-urlencode fullTMCheck=true |
    /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
rows = []
def walk(res, where):
    for rep in res.get("reports", []):
        for t in rep.get("tests", []):
            rows.append((where, rep["name"], t["name"], t["result"]))
walk(d["result"], d["type"] + " " + d["uri"])
for kind, items in (d.get("follow") or {}).items():
    for it in items:
        walk(it["result"], "  follow " + kind + " " + it["uri"])
for r in rows:
    print("%-4s %s | %s | %s" % (r[3], r[0], r[1], r[2]))
fails = [r for r in rows if r[3] == "Fail"]
unexpected = [r for r in fails if not (d["type"] == "original" and r[1] == "DatetimeNegotiationTest")]
print("=> %s %s: %d pass, %d fail (%d unexpected), %d warn" % (d["type"], d["uri"], sum(r[3] == "Pass" for r in rows), len(fails), len(unexpected), sum(r[3] == "Warn" for r in rows)))
sys.exit(1 if unexpected else 0)
' || status=1
}
check memento "$memento"
check timegate "$a/tg/$uri_r"
check timegate "$a/current/timegate/$uri_r"
check timemap "$a/tg/timemap/$uri_r"
check timemap "$a/current/timemap/link/$uri_r"
check original "$original"
exit $status
