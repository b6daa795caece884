"""memprof_common.py - what the memprof tests share: the pass/fail
counter, folded and pprof readers and checkers (pprof decoded by protoc
against Debian's profile.proto), and the workload runner."""
import ast
import gzip
import os
import subprocess
import time

MiB = 1 << 20


PROTO = "/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto"


failures = 0


def check(cond, what):
    global failures
    if cond:
        print("ok  ", what)
    else:
        failures += 1
        print("FAIL", what)


def norm(frames, api_frame=True):
    """The stack from main/worker on (libc start-up frames vary)."""
    for i, f in enumerate(frames):
        if f in ("main", "worker"):
            return tuple(frames[i:])
    return tuple(frames)


def scaled(d, k=1):
    return {s: (b * k, n * k) for s, (b, n) in d.items()}


def merged(*ds):
    out = {}
    for d in ds:
        for s, (b, n) in d.items():
            ob, on = out.get(s, (0, 0))
            out[s] = (ob + b, on + n)
    return out


def strip_api(d):
    return {s[:-1]: v for s, v in d.items()}


def read_folded(path, comm="prog_memprof"):
    """{normalized stack: value}; every line must parse and be unique."""
    out = {}
    with open(path) as f:
        for line in f:
            stack, _, val = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if not val.isdigit() or not stack:
                check(False, "folded line parses: %r" % line)
                continue
            if frames[0] != comm:
                continue
            k = norm(frames[1:])
            out[k] = out.get(k, 0) + int(val)
    return out


def check_folded(path, want, what, comm="prog_memprof"):
    got = read_folded(path, comm)
    exp = {s: b for s, (b, n) in want.items()}
    check(got == exp, "%s: folded %s" % (what, os.path.basename(path)))
    if got != exp:
        for s in sorted(set(got) | set(exp)):
            if got.get(s) != exp.get(s):
                print("     %s got %s want %s" % (";".join(s), got.get(s),
                                                  exp.get(s)))


def self_total(path, comm="prog_memprof"):
    selfv, total = {}, {}
    with open(path) as f:
        for line in f:
            stack, _, val = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if frames[0] != comm:
                continue
            v = int(val)
            selfv[frames[-1]] = selfv.get(frames[-1], 0) + v
            for fr in set(frames):
                total[fr] = total.get(fr, 0) + v
    return selfv, total


def parse_text_proto(text):
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            d = {}
            cur.setdefault(line[:-1].strip(), []).append(d)
            stack.append(cur)
            cur = d
        elif line == "}":
            cur = stack.pop()
        else:
            k, _, v = line.partition(":")
            v = v.strip()
            v = ast.literal_eval(v) if v.startswith('"') else int(v)
            cur.setdefault(k.strip(), []).append(v)
    return root


def read_pprof(path, comm="prog_memprof"):
    """{(pid, normalized stack): [alloc_n, alloc_b, inuse_n, inuse_b]}"""
    raw = gzip.open(path).read()
    r = subprocess.run(["protoc", "--decode=perftools.profiles.Profile",
                        "-I", os.path.dirname(PROTO), PROTO], input=raw,
                       capture_output=True)
    if r.returncode:
        check(False, "protoc decodes %s: %s" % (path, r.stderr.decode()))
        return None, None
    p = parse_text_proto(r.stdout.decode("latin-1"))
    st = p["string_table"]
    types = [(st[t["type"][0]], st[t["unit"][0]]) for t in p["sample_type"]]
    funcs = {f["id"][0]: st[f["name"][0]] for f in p.get("function", [])}
    locs = {l["id"][0]: funcs[l["line"][0]["function_id"][0]]
            for l in p.get("location", [])}
    out = {}
    for s in p.get("sample", []):
        labels = {st[l["key"][0]]: (l["num"][0] if "num" in l
                                    else st[l["str"][0]])
                  for l in s.get("label", [])}
        if labels.get("comm") != comm:
            continue
        frames = [locs[i] for i in reversed(s.get("location_id", []))]
        k = (labels["pid"], norm(frames))
        v = s["value"]
        o = out.setdefault(k, [0, 0, 0, 0])
        for i in range(4):
            o[i] += v[i]
    meta = {"types": types, "default": st[p["default_sample_type"][0]],
            "period_type": (st[p["period_type"][0]["type"][0]],
                            st[p["period_type"][0]["unit"][0]])}
    return out, meta


def check_pprof(path, alloc, inuse, what, comm="prog_memprof"):
    prof, meta = read_pprof(path, comm)
    if prof is None:
        return
    check(meta["types"] == [("alloc_objects", "count"), ("alloc_space", "bytes"),
                            ("inuse_objects", "count"), ("inuse_space", "bytes")],
          "%s: pprof sample types" % what)
    check(meta["default"] == "inuse_space" and
          meta["period_type"] == ("space", "bytes"),
          "%s: pprof default type / period type" % what)
    ga, gi = {}, {}
    for (pid, s), v in prof.items():
        a = ga.get(s, (0, 0))
        ga[s] = (a[0] + v[1], a[1] + v[0])
        if v[2] or v[3]:
            i = gi.get(s, (0, 0))
            gi[s] = (i[0] + v[3], i[1] + v[2])
    ga = {s: v for s, v in ga.items() if v != (0, 0)}
    check(ga == alloc, "%s: pprof alloc_space/alloc_objects per stack" % what)
    check(gi == inuse, "%s: pprof inuse_space/inuse_objects per stack" % what)
    if ga != alloc or gi != inuse:
        print("     alloc got", ga, "\n     inuse got", gi)


class Prog:
    """prog_memprof waiting on files in a temp dir."""

    def __init__(self, a, d, name, go_now=False, hold=True, prog=None):
        self.go = os.path.join(d, name + ".go")
        self.exit = os.path.join(d, name + ".exit")
        if go_now:
            open(self.go, "w").close()
        argv = [prog or a.prog, self.go] + ([self.exit] if hold else [])
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)

    def start(self):
        open(self.go, "w").close()

    def wait_done(self):
        line = self.p.stdout.readline()
        check(line.strip() == "done 0", "workload ran: %r" % line.strip())

    def finish(self):
        open(self.exit, "w").close()
        return self.p.wait(timeout=30)


def wait_for(path, text, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(path) as f:
                if text in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False
