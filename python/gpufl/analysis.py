"""gpufl.analysis - a gpufl log folder as plain Python objects.

    from gpufl import analysis
    for s in analysis.load("./gpufl-logs"):          # one Session per session
        print(s.sid, s.simulated, len(s.kernels))
        for row in s.kernel_summary()[:5]:
            print(row["name"], row["count"], row["total_ns"], row["p99_ns"])

Pure Python (json module; `zstd` on the PATH, or the zstandard module, for
rotated .zst files).  It follows docs/events.md: rotated files in order,
then the live file; partial last lines and lines that do not parse are
skipped and counted; dictionaries resolve names, scope paths and launch
configurations.  Everything is loaded into memory, so use `gpufl report`
for very large folders.  pandas is not needed; each list converts with
pandas.DataFrame(s.kernels) if you have it.
"""
import glob
import json
import math
import os
import re
import subprocess
from collections import defaultdict

STREAMS = ("device", "scope", "system")
_NAME = re.compile(r"^(.*)\.(device|scope|system)\.log(\.(\d+)(\.zst)?)?$")


def _read(path):
    if path.endswith(".zst"):
        try:
            import zstandard  # optional
            with open(path, "rb") as f:
                return zstandard.ZstdDecompressor().stream_reader(f).read()
        except ImportError:
            return subprocess.run(["zstd", "-dcq", path], check=True,
                                  stdout=subprocess.PIPE).stdout
    with open(path, "rb") as f:
        return f.read()


def _files(prefix, stream):
    rot = {}
    for p in glob.glob(glob.escape(prefix) + ".%s.log.*" % stream):
        m = _NAME.match(p)
        if m and m.group(4) and m.group(1) == prefix:
            n = int(m.group(4))
            if n not in rot or p.endswith(".zst"):
                rot[n] = p
    out = [rot[n] for n in sorted(rot)]
    live = "%s.%s.log" % (prefix, stream)
    if os.path.exists(live):
        out.append(live)
    return out


def _dims(a):
    a = list(a or [1])
    return tuple(a + [1] * (3 - len(a)))


def _quantile(sorted_vals, q):
    """Nearest rank, as gpufl report."""
    if not sorted_vals:
        return 0
    k = max(1, math.ceil(q * len(sorted_vals)))
    return sorted_vals[k - 1]


class Session:
    """One session: header fields and lists of plain dicts."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.header = {}
        self.sid = None
        self.simulated = False
        self.kernels = []   # {ts, dur, dev, stream, name, grid, block, regs, smem, dsmem, lmem, occ, lim, scope}
        self.copies = []    # {ts, dur, dev, stream, kind, bytes, pinned}
        self.memsets = []
        self.syncs = []
        self.scopes = []    # {ts (begin), dur, name, path, tid, depth, id}
        self.markers = []   # {ts, text, tid}
        self.counters = []  # {ts, name, value}
        self.gpu_samples = []   # the gpu lines as dicts
        self.host_samples = []
        self.losses = []
        self.skipped = 0    # lines that did not parse, partial last lines
        self.ended = {}     # stream -> session_end line
        self._dict = {}
        self._inst = {}

    # -- dictionary helpers --
    def name(self, id_):
        d = self._dict.get(id_)
        return d["name"] if d and d.get("kind") == "name" else None

    def path(self, id_):
        parts = []
        while id_:
            d = self._dict.get(id_)
            if not d or d.get("kind") != "path":
                break
            parts.append(self.name(d["name"]) or "?")
            id_ = d["parent"]
        return "/".join(reversed(parts)) or None

    @property
    def devices(self):
        return self.header.get("devices", [])

    # -- summaries --
    def kernel_summary(self):
        """Per kernel name: count, total/avg/min/max/p50/p99 ns, share of
        GPU time; sorted by total time."""
        by = defaultdict(list)
        for k in self.kernels:
            by[k["name"]].append(k["dur"])
        total = sum(k["dur"] for k in self.kernels) or 1
        rows = []
        for name, durs in by.items():
            durs.sort()
            t = sum(durs)
            rows.append({"name": name, "count": len(durs), "total_ns": t,
                         "avg_ns": t / len(durs), "min_ns": durs[0],
                         "max_ns": durs[-1], "p50_ns": _quantile(durs, 0.5),
                         "p99_ns": _quantile(durs, 0.99), "share": t / total})
        rows.sort(key=lambda r: -r["total_ns"])
        return rows

    def copy_summary(self):
        """Per direction: count, bytes, dur_ns, gbps (bytes per ns)."""
        by = {}
        for c in self.copies:
            r = by.setdefault(c["kind"], {"kind": c["kind"], "count": 0,
                                          "bytes": 0, "dur_ns": 0})
            r["count"] += 1
            r["bytes"] += c["bytes"]
            r["dur_ns"] += c["dur"]
        for r in by.values():
            r["gbps"] = r["bytes"] / r["dur_ns"] if r["dur_ns"] else 0.0
        return sorted(by.values(), key=lambda r: r["kind"])

    def scope_summary(self):
        """Per scope path: count, total_ns, avg_ns, max_ns, gpu_ns (kernels
        attributed to the scope itself)."""
        by = {}
        for s in self.scopes:
            r = by.setdefault(s["path"], {"path": s["path"], "count": 0,
                                          "total_ns": 0, "max_ns": 0,
                                          "gpu_ns": 0})
            r["count"] += 1
            r["total_ns"] += s["dur"]
            r["max_ns"] = max(r["max_ns"], s["dur"])
        for k in self.kernels:
            if k["scope"] in by:
                by[k["scope"]]["gpu_ns"] += k["dur"]
        for r in by.values():
            r["avg_ns"] = r["total_ns"] / r["count"]
        return sorted(by.values(), key=lambda r: r["path"])

    def device_summary(self):
        """Per device id: kernels, kernel_ns, busy_ns (union of kernel
        intervals), span_ns, and the GPU samples' util/VRAM/temp/power."""
        out = {}
        ivs = defaultdict(list)
        for k in self.kernels:
            ivs[k["dev"]].append((k["ts"], k["ts"] + k["dur"]))
        for dev, iv in ivs.items():
            iv.sort()
            busy, cur_s, cur_e = 0, None, None
            for s, e in iv:
                if cur_e is None or s > cur_e:
                    if cur_e is not None:
                        busy += cur_e - cur_s
                    cur_s, cur_e = s, e
                else:
                    cur_e = max(cur_e, e)
            busy += cur_e - cur_s
            span = max(e for _, e in iv) - iv[0][0]
            out[dev] = {"dev": dev, "kernels": len(iv),
                        "kernel_ns": sum(e - s for s, e in iv),
                        "busy_ns": busy, "span_ns": span}
        for g in self.gpu_samples:
            r = out.setdefault(g.get("dev", 0), {"dev": g.get("dev", 0)})
            r.setdefault("samples", 0)
            r["samples"] += 1
            for k, agg in (("util", max), ("mem_used", max), ("temp", max),
                           ("power", max)):
                if k in g:
                    r[k + "_max"] = agg(r.get(k + "_max", g[k]), g[k])
        return [out[k] for k in sorted(out)]

    def summary(self):
        ks = self.kernels
        return {"sid": self.sid, "app": self.header.get("app"),
                "simulated": self.simulated, "kernels": len(ks),
                "kernel_ns": sum(k["dur"] for k in ks),
                "copies": len(self.copies),
                "bytes_copied": sum(c["bytes"] for c in self.copies),
                "scopes": len(self.scopes), "markers": len(self.markers),
                "skipped_lines": self.skipped,
                "complete": all(s in self.ended for s in STREAMS)}

    # -- loading --
    def _event(self, e):
        t = e.get("type")
        if t == "dict":
            self._dict.setdefault(e.get("id"), e)
        elif t == "session":
            if not self.header:
                self.header = e
                self.sid = e.get("sid")
                self.simulated = bool(e.get("simulated"))
        elif t == "session_end":
            self.ended[e["st"]] = e
        elif t == "kernel":
            cfg = self._dict.get(e.get("cfg")) if "cfg" in e else None
            src = cfg if cfg else e
            sc = e.get("scope")
            path = self._inst.get(sc) if sc else (self.path(e["path"]) if e.get("path") else None)
            self.kernels.append({
                "ts": e["ts"], "dur": e.get("dur", 0), "dev": e.get("dev", 0),
                "stream": e.get("stream", 0), "corr": e.get("corr", 0),
                "name": self.name(src.get("name", 0)) or "(unknown)",
                "grid": _dims(e.get("grid")), "block": _dims(src.get("block")),
                "regs": src.get("regs", 0), "smem": src.get("smem", 0),
                "dsmem": src.get("dsmem", 0), "lmem": src.get("lmem", 0),
                "occ": src.get("occ"), "lim": src.get("lim"), "scope": path})
        elif t in ("memcpy", "memset"):
            lst = self.copies if t == "memcpy" else self.memsets
            lst.append({"ts": e["ts"], "dur": e.get("dur", 0),
                        "dev": e.get("dev", 0), "stream": e.get("stream", 0),
                        "kind": e.get("kind", "memset"),
                        "bytes": e.get("bytes", 0),
                        "pinned": bool(e.get("pinned"))})
        elif t == "sync":
            self.syncs.append(e)
        elif t == "scope_begin":
            self._inst[e["id"]] = self.path(e.get("path", 0))
        elif t == "scope_end":
            p = self.path(e.get("path", 0))
            self._inst.setdefault(e["id"], p)
            self.scopes.append({"ts": e["ts"] - e.get("dur", 0),
                                "dur": e.get("dur", 0),
                                "name": self.name(e.get("name", 0)),
                                "path": p, "tid": e.get("tid", 0),
                                "depth": e.get("depth", 0), "id": e["id"]})
        elif t == "marker":
            self.markers.append({"ts": e["ts"], "text": e.get("text", ""),
                                 "tid": e.get("tid", 0)})
        elif t == "counter":
            self.counters.append({"ts": e["ts"],
                                  "name": self.name(e.get("name", 0)),
                                  "value": e.get("value", 0)})
        elif t == "gpu":
            self.gpu_samples.append(e)
        elif t == "host":
            self.host_samples.append(e)
        elif t == "loss":
            self.losses.append(e)


def _load_prefix(prefix):
    s = Session(prefix)
    streams = []
    for st in STREAMS:
        evs, seen = [], set()
        for path in _files(prefix, st):
            data = _read(path)
            lines = data.split(b"\n")
            if lines and lines[-1]:
                s.skipped += 1  # partial last line
            for raw in lines[:-1]:
                try:
                    e = json.loads(raw)
                except ValueError:
                    s.skipped += bool(raw)
                    continue
                if not isinstance(e, dict) or e.get("v") != 1:
                    s.skipped += 1
                    continue
                key = e.get("seq")
                if key in seen:
                    continue
                seen.add(key)
                evs.append(e)
        streams.append(evs)
    # dictionaries and scope instances first, so device events resolve
    for evs in streams:
        for e in evs:
            t = e.get("type")
            if t in ("dict", "session"):
                s._event(e)
    for e in streams[1]:
        if e.get("type") == "scope_begin":
            s._event(e)
    for evs in streams:
        for e in evs:
            if e.get("type") not in ("dict", "session", "scope_begin"):
                s._event(e)
    for lst in (s.kernels, s.copies, s.memsets, s.scopes, s.markers,
                s.counters):
        lst.sort(key=lambda r: r["ts"])
    return s


def prefixes(log_dir):
    out = set()
    for p in glob.glob(os.path.join(glob.escape(log_dir), "*.log*")):
        m = _NAME.match(p)
        if m:
            out.add(m.group(1))
    return sorted(out)


def load(log_dir, session=None):
    """Every session in log_dir as a list of Session, oldest first; with
    session (an id, id prefix or file prefix) only the matching ones."""
    out = []
    for p in prefixes(log_dir):
        s = _load_prefix(p)
        if session and not ((s.sid or "").startswith(session) or
                            os.path.basename(p) == session):
            continue
        out.append(s)
    out.sort(key=lambda s: s.header.get("start", 0))
    return out
