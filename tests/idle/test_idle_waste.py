"""test_idle_waste.py - the `waste` lines of `gpufl idle watch`
(docs/events.md "waste"): the real daemon on simulated GPUs writes them
into its log every --waste-interval and at exit; summed, they are the
counters its /metrics shows (busy and wasted seconds per GPU and owner),
and gpufl-server's /api/v1/fleet/waste answers those sums.

Environment: GPUFL_BIN_DIR, GPUFL_TEST_TMP.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import srvtest  # noqa: E402

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
GPUFL = os.path.join(BIN, "gpufl")
TMP = os.environ.get("GPUFL_TEST_TMP", tempfile.gettempdir())
SCENES = "held,phantom,stuck,allocated,bursty,train"
OWNER = ("namespace", "pod", "container", "job", "user")
METRIC = re.compile(r'^(gpufl_gpu_(?:busy|wasted)_seconds_total)\{([^}]*)\}'
                    r' (\S+)$', re.M)
LABEL = re.compile(r'(\w+)="([^"]*)"')


def metrics_sums(text):
    """{(gpu, owner..., what): seconds}: the busy and wasted counters of a
    scrape summed over their pid series; what is "busy" or a reason."""
    out = {}
    for name, labels, v in METRIC.findall(text):
        lb = dict(LABEL.findall(labels))
        what = "busy" if "busy" in name else lb["reason"]
        k = (int(lb["gpu"]),) + tuple(lb[o] for o in OWNER) + (what,)
        out[k] = out.get(k, 0.0) + float(v)
    return out


def lines_sums(lines):
    """The same key from waste lines, summed."""
    out = {}
    for w in lines:
        base = (w["dev"],) + tuple(w.get(o, "") for o in OWNER)
        items = list(w["wasted_s"].items())
        if "busy_s" in w:
            items.append(("busy", w["busy_s"]))
        for what, v in items:
            out[base + (what,)] = out.get(base + (what,), 0.0) + v
    return out


def close(a, b, eps=0.003):
    keys = set(a) | set(b)
    return all(abs(a.get(k, 0.0) - b.get(k, 0.0)) <= eps for k in keys)


def read_log(d):
    out = []
    for name in os.listdir(d):
        with open(os.path.join(d, name)) as f:
            for x in f:
                if x.endswith("\n"):
                    out.append(json.loads(x))
    return out


class WasteLines(unittest.TestCase):
    def test_lines_sum_to_metrics_and_server(self):
        d = tempfile.mkdtemp(prefix="idlewaste.", dir=TMP)
        logs = os.path.join(d, "logs")
        os.makedirs(logs)
        # every round ships, before /metrics is published: a scrape shows
        # the sums of the lines of some round, exactly
        p = subprocess.Popen(
            [GPUFL, "idle", "watch", "--simulate", SCENES, "--interval",
             "200", "--window", "1", "--phantom-hold", "0", "--stuck-hold",
             "0", "--waste-interval", "200ms", "--listen", "127.0.0.1:0",
             "--log-dir", logs, "--duration", "4"],
            env=srvtest.clean_env(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            port = None
            buf = ""
            while port is None:
                line = p.stderr.readline()
                if not line:
                    break
                buf += line
                m = re.search(r"listening on [^:]+:(\d+)", line)
                if m:
                    port = int(m.group(1))
            self.assertIsNotNone(port, buf)
            matched = 0
            for _ in range(4):
                time.sleep(0.7)
                with urllib.request.urlopen(
                        "http://127.0.0.1:%d/metrics" % port) as r:
                    text = r.read().decode()
                lines = [x for x in read_log(logs) if x["type"] == "waste"]
                m = metrics_sums(text)
                self.assertTrue(m, text)
                # the lines up to some round's end add up to the scrape
                ends = sorted({x["to"] for x in lines})
                ok = any(close(m, lines_sums([x for x in lines
                                              if x["to"] <= t]))
                         for t in ends)
                self.assertTrue(ok, "no prefix of %d lines sums to %s"
                                % (len(lines), m))
                matched += 1
            self.assertEqual(matched, 4)
            p.wait(30)
            self.assertEqual(p.returncode, 0)
        finally:
            if p.poll() is None:
                p.kill()
            p.stderr.close()
            p.stdout.close()
        lines = [x for x in read_log(logs) if x["type"] == "waste"]
        reasons = {r for x in lines for r in x["wasted_s"]}
        self.assertEqual(reasons, {"idle", "held", "phantom", "stuck",
                                   "allocated_unused"})
        for x in lines:
            self.assertIs(x["simulated"], True)
            self.assertLess(x["from"], x["to"])
            self.assertTrue(x["uuid"].startswith("GPU-"))
            self.assertIn("Simulated", x["model"])
        alloc = [x for x in lines if "allocated_unused" in x["wasted_s"]]
        self.assertEqual({(x["namespace"], x["pod"]) for x in alloc},
                         {("demo", "notebook-3")})
        # consecutive lines of one (GPU, owner) tile time: no second
        # counted twice, none lost
        per = {}
        for x in sorted(lines, key=lambda x: x["seq"]):
            per.setdefault((x["dev"],) + tuple(x.get(o) for o in OWNER),
                           []).append(x)
        for k, xs in per.items():
            for a, b in zip(xs, xs[1:]):
                self.assertLessEqual(a["to"], b["from"], k)
        # the server sums them the same way
        srv = srvtest.Server(os.path.join(d, "data"))
        try:
            name = [n for n in os.listdir(logs)][0]
            with open(os.path.join(logs, name), "rb") as f:
                r = srv.ingest_ok("system", f.read())
            self.assertEqual(r["rejected"], 0, r)
            t0 = min(x["from"] for x in lines) - 10 ** 9
            t1 = max(x["to"] for x in lines) + 10 ** 9
            w = srv.get("/api/v1/fleet/waste?by=gpu&from=%d&to=%d&step=60"
                        % (t0, t1))
            self.assertIs(w["simulated"], True)
            want = {}
            for x in lines:
                e = want.setdefault(x["uuid"], [0.0, 0.0])
                e[0] += x.get("busy_s", 0.0)
                e[1] += sum(x["wasted_s"].values())
            got = {e["key"]: e for e in w["top"]}
            self.assertEqual(set(got), set(want))
            for k, (busy, wasted) in want.items():
                self.assertAlmostEqual(got[k]["busy_gpu_h"] * 3600, busy,
                                       delta=1e-3)
                self.assertAlmostEqual(got[k]["wasted_gpu_h"] * 3600, wasted,
                                       delta=1e-3)
            ns = srv.get("/api/v1/fleet/waste?by=namespace&from=%d&to=%d"
                         "&step=60" % (t0, t1))
            demo = [e for e in ns["top"] if e["key"] == "demo"][0]
            self.assertAlmostEqual(
                demo["by_reason"]["allocated_unused"] * 3600,
                sum(x["wasted_s"]["allocated_unused"] for x in alloc),
                delta=1e-3)
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
