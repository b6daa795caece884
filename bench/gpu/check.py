#!/usr/bin/env python3
"""check.py LOG_DIR EXPECT_JSON - compare what gpufl captured in LOG_DIR
(one session) with the EXPECT line a bench/gpu program printed.

Uses the independent log reader tests/client/gpufl_logs.py.  Prints one
line per check and exits 1 when any fails."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "client"))
import gpufl_logs as gl  # noqa: E402


def main():
    log_dir, exp = sys.argv[1], json.loads(sys.argv[2])
    sessions = gl.validate(log_dir)
    if len(sessions) != 1:
        print("FAIL sessions: %d (want 1)" % len(sessions))
        return 1
    sess = next(iter(sessions.values()))
    dev = sess.streams["device"]
    ok = True

    def check(what, got, want):
        nonlocal ok
        good = got == want
        ok &= good
        print("%s %s: got %s, want %s" % ("ok  " if good else "FAIL", what,
                                          got, want))

    check("cupti engine", sess.header["engines"].get("cupti"), "on")
    kernels = {}
    for k in dev.of("kernel"):
        cfg = sess.launch(k["cfg"]) if "cfg" in k else k
        name = sess.name(cfg["name"]) if cfg.get("name") else "?"
        kernels.setdefault(name, []).append((k, cfg))
    for name, n in exp.get("kernels", {}).items():
        ks = kernels.get(name, [])
        check("%s count" % name, len(ks), n)
        if not ks:
            continue
        k, cfg = ks[0]
        if name in exp.get("grid", {}):
            check("%s grid" % name, k["grid"], exp["grid"][name])
        if name in exp.get("block", {}):
            check("%s block" % name, cfg["block"], exp["block"][name])
        if name in exp.get("smem", {}):
            check("%s smem" % name, cfg.get("smem", 0), exp["smem"][name])
        check("%s has api times" % name,
              all("api" in kk for kk, _ in ks), True)
        check("%s has occupancy" % name, "occ" in cfg, True)
    byk = {}
    for c in dev.of("memcpy"):
        byk[c["kind"]] = byk.get(c["kind"], 0) + c["bytes"]
    for kind, b in exp.get("bytes", {}).items():
        check("%s bytes" % kind, byk.get(kind, 0), b)
    if "streams_min" in exp:
        streams = {k.get("stream", 0) for ks in kernels.values() for k, _ in ks}
        check("distinct streams >= %d" % exp["streams_min"],
              len(streams) >= exp["streams_min"], True)
    lost = sum(e["count"] for s in sess.streams.values() for e in s.of("loss"))
    check("events lost", lost, 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
