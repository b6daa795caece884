"""test_idle_prom.py - Debian's Prometheus scrapes `gpufl idle watch`'s
/metrics and the values are read back through its HTTP query API.  Exits
77 (skip) with the reason when prometheus is not installed or cannot
start here.

Environment: GPUFL_BIN_DIR, GPUFL_TEST_TMP.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
TMP = os.environ.get("GPUFL_TEST_TMP", tempfile.gettempdir())


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (
        port, urllib.parse.quote(q))
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def main():
    prom = shutil.which("prometheus")
    if not prom:
        print("SKIP: prometheus is not installed (apt-get install prometheus;"
              " scripts/deps/idle.test)")
        return 77
    d = os.path.join(TMP, "idle_prom_%d" % os.getpid())
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_IDLE")}
    idle = subprocess.Popen(
        [os.path.join(BIN, "gpufl"), "idle", "watch", "--simulate",
         "none,matmul", "--session", "name=alice,devs=1,pod=ns/alice",
         "--listen", "127.0.0.1:0", "--interval", "200", "--window", "2",
         "--grace", "0",
         "--duration", "60"], env=env, stderr=subprocess.PIPE, text=True)
    promp = None
    try:
        port = None
        deadline = time.time() + 20
        while port is None and time.time() < deadline:
            m = re.search(r"listening on [^:]+:(\d+)", idle.stderr.readline())
            if m:
                port = int(m.group(1))
        if port is None:
            print("FAIL: gpufl idle did not start")
            return 1
        cfg = os.path.join(d, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: gpufl-idle\n"
                    "    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                    % port)
        pport = free_port()
        plog = open(os.path.join(d, "prometheus.log"), "w")
        promp = subprocess.Popen(
            [prom, "--config.file=" + cfg, "--storage.tsdb.path=" +
             os.path.join(d, "tsdb"), "--web.listen-address=127.0.0.1:%d" % pport],
            stdout=plog, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        busy = power = None
        while time.time() < deadline:
            if promp.poll() is not None:
                print("SKIP: prometheus exited %d here: %s" % (
                    promp.returncode,
                    open(os.path.join(d, "prometheus.log")).read()[-500:]))
                return 77
            try:
                r = query(pport, 'gpufl_idle_gpu_state{gpu="1",state="BUSY"}')
                res = r["data"]["result"]
                if res:
                    busy = res[0]
                    p = query(pport, 'gpufl_idle_gpu_power_watts{gpu="1"}')
                    power = p["data"]["result"]
                    if power:
                        break
            except OSError:
                pass
            time.sleep(0.5)
        if not busy or not power:
            print("FAIL: no scraped value within 60 s")
            return 1
        ok = True
        if busy["value"][1] != "1":
            print("FAIL: BUSY state gauge is %s" % busy["value"][1])
            ok = False
        lab = busy["metric"]
        for k in ("UUID", "pci_bus_id", "modelName", "Hostname", "hostname"):
            if k not in lab:
                print("FAIL: label %s missing: %s" % (k, lab))
                ok = False
        if abs(float(power[0]["value"][1]) - 299.2) > 0.01:
            print("FAIL: power %s, want 299.2" % power[0]["value"][1])
            ok = False
        s = query(pport, 'gpufl_idle_session_state{session="alice",'
                         'state="ACTIVE"}')["data"]["result"]
        if not s or s[0]["value"][1] != "1" or s[0]["metric"]["namespace"] != "ns":
            print("FAIL: session gauge %s" % s)
            ok = False
        print("prometheus read back: BUSY=%s power=%s W labels=%s" % (
            busy["value"][1], power[0]["value"][1], sorted(lab)))
        return 0 if ok else 1
    finally:
        if promp and promp.poll() is None:
            promp.terminate()
            promp.wait(30)
        idle.terminate()
        idle.wait(30)


if __name__ == "__main__":
    sys.exit(main())
