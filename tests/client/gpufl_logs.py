"""gpufl_logs.py - an independent reader and validator of gpufl's JSONL logs
(docs/events.md), for the integration tests.  It uses Python's json module,
not gpufl's own reader, so the two implementations check each other.

validate(log_dir) finds every session in a folder, reads each stream's
files in order (rotated .N and .N.zst first, then the live file), checks
the format's invariants and returns {sid: Session}.
"""
import glob
import json
import os
import re
import subprocess

STREAMS = ("device", "scope", "system")
ENVELOPE = ("v", "sid", "st", "seq", "ts", "type")
DEVICE_TYPES = {"session", "dict", "kernel", "memcpy", "memset", "sync",
                "alloc", "free", "loss", "trigger", "session_end"}
SCOPE_TYPES = {"session", "dict", "scope_begin", "scope_end", "marker",
               "counter", "sass", "pcsamp", "loss", "trigger", "session_end"}
SYSTEM_TYPES = {"session", "dict", "gpu", "host", "verdict", "waste", "loss",
                "trigger", "session_end"}
TYPES = {"device": DEVICE_TYPES, "scope": SCOPE_TYPES, "system": SYSTEM_TYPES}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class LogError(AssertionError):
    pass


class Stream:
    def __init__(self, name):
        self.name = name
        self.events = []        # every parsed line, in order
        self.files = []         # (path, first_seq, nlines)
        self.partial = []       # partial last lines seen (bytes)
        self.damaged = []       # unparseable lines skipped (write errors)
        self.gaps = 0           # seq numbers missing (lines lost on write)
        self.dicts = {}         # id -> dict line (last definition)

    def of(self, *types):
        return [e for e in self.events if e["type"] in types]


class Session:
    def __init__(self, sid):
        self.sid = sid
        self.streams = {s: Stream(s) for s in STREAMS}
        self.header = None

    def name(self, id_):
        """The string a name id stands for."""
        for s in self.streams.values():
            d = s.dicts.get(id_)
            if d and d["kind"] == "name":
                return d["name"]
        raise LogError("name id %s not defined" % id_)

    def display(self, id_):
        """A name id's readable form: the dict line's demangled string when
        it has one, else the name itself (docs/api.md "Names")."""
        for s in self.streams.values():
            d = s.dicts.get(id_)
            if d and d["kind"] == "name":
                return d.get("demangled", d["name"])
        raise LogError("name id %s not defined" % id_)

    def path(self, id_):
        """The scope path of a path id, as 'a/b/c'."""
        parts = []
        while id_:
            d = None
            for s in self.streams.values():
                d = s.dicts.get(id_) or d
            if not d or d["kind"] != "path":
                raise LogError("path id %s not defined" % id_)
            parts.append(self.name(d["name"]))
            id_ = d["parent"]
        return "/".join(reversed(parts))

    def launch(self, id_):
        d = self.streams["device"].dicts.get(id_)
        if not d or d["kind"] != "launch":
            raise LogError("launch id %s not defined" % id_)
        return d


def _read(path):
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], check=True,
                              stdout=subprocess.PIPE).stdout
    with open(path, "rb") as f:
        return f.read()


def _files(prefix, stream):
    live = "%s.%s.log" % (prefix, stream)
    rot = {}
    for p in glob.glob(live + ".*"):
        m = re.match(r".*\.log\.(\d+)(\.zst)?$", p)
        if m and not p.endswith(".tmp"):
            rot.setdefault(int(m.group(1)), p)
    out = [rot[n] for n in sorted(rot)]
    if os.path.exists(live):
        out.append(live)
    return out, sorted(rot)


def _refs(e):
    """(field, id, expected dict kind) this event refers to."""
    t = e["type"]
    out = []
    def add(k, kind):
        if e.get(k):
            out.append((k, e[k], kind))
    if t == "kernel":
        add("cfg", "launch")
        add("name", "name")
        add("path", "path")
        add("stack", "stack")
    elif t in ("memcpy", "memset", "sync", "alloc", "free"):
        add("path", "path")
        add("stack", "stack")
    elif t in ("scope_begin", "scope_end"):
        add("name", "name")
        add("path", "path")
    elif t == "counter":
        add("name", "name")
    elif t in ("sass", "pcsamp"):
        add("func", "name")
        add("file", "name")
        add("path", "path")
    elif t == "dict":
        if e["kind"] == "path":
            if e["parent"]:
                out.append(("parent", e["parent"], "path"))
            out.append(("name", e["name"], "name"))
        elif e["kind"] == "launch":
            out.append(("name", e["name"], "name"))
    return out


def read_stream(prefix, stream, allow_partial=False, pruned_ok=False,
                write_errors=False):
    """Read and check one stream of one session.  Returns (sid, Stream).
    write_errors: the disk filled up; damaged lines are skipped and seq
    gaps counted (the caller checks them against the loss lines)."""
    paths, rotated = _files(prefix, stream)
    if not paths:
        raise LogError("no %s files for %s" % (stream, prefix))
    st = Stream(stream)
    sid = None
    prev_seq = None
    for fi, path in enumerate(paths):
        data = _read(path)
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline: b"" when complete
        if tail:
            # a killed writer leaves one in the live file; a full disk can
            # leave one at the end of any file it was writing
            if not (allow_partial and fi == len(paths) - 1) and not write_errors:
                raise LogError("%s: partial last line %r" % (path, tail[:80]))
            st.partial.append(tail)
        defined = set()  # dict ids defined in THIS file
        first = True
        for ln, raw in enumerate(lines, 1):
            where = "%s:%d" % (path, ln)
            try:
                e = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as x:
                if write_errors:
                    st.damaged.append(raw)
                    continue
                raise LogError("%s: not JSON: %s: %r" % (where, x, raw[:120]))
            if not isinstance(e, dict):
                raise LogError("%s: not an object" % where)
            for k in ENVELOPE:
                if k not in e:
                    raise LogError("%s: missing %s" % (where, k))
            if e["v"] != 1:
                raise LogError("%s: v=%r" % (where, e["v"]))
            if not UUID.match(e["sid"]):
                raise LogError("%s: sid %r is not a UUID v4" % (where, e["sid"]))
            if sid is None:
                sid = e["sid"]
            elif e["sid"] != sid:
                raise LogError("%s: sid changed" % where)
            if e["st"] != stream:
                raise LogError("%s: st=%r in a %s file" % (where, e["st"], stream))
            if not (isinstance(e["seq"], int) and isinstance(e["ts"], int) and e["ts"] > 0):
                raise LogError("%s: seq/ts must be integers" % where)
            if prev_seq is not None and e["seq"] != prev_seq + 1:
                gap_ok = first and pruned_ok
                if write_errors and e["seq"] > prev_seq:
                    st.gaps += e["seq"] - prev_seq - 1
                    gap_ok = True
                if not gap_ok:
                    raise LogError("%s: seq %d after %d" % (where, e["seq"], prev_seq))
            if prev_seq is None and e["seq"] != 0 and not pruned_ok:
                raise LogError("%s: first seq is %d" % (where, e["seq"]))
            prev_seq = e["seq"]
            if e["type"] not in TYPES[stream]:
                raise LogError("%s: type %r not allowed in %s" % (where, e["type"], stream))
            if first and not (write_errors and e["type"] != "session"):
                if e["type"] != "session":
                    raise LogError("%s: file does not begin with a session line" % where)
                expect = rotated[fi] - 1 if fi < len(rotated) else len(rotated)
                if rotated and fi == len(paths) - 1:
                    expect = rotated[-1]
                if not rotated:
                    expect = 0
                if e["file"] != expect and not pruned_ok:
                    raise LogError("%s: file index %s, expected %s" % (where, e["file"], expect))
                first = False
            for field, id_, kind in _refs(e):
                if id_ not in defined:
                    raise LogError("%s: %s=%s used before its dict line in this file"
                                   % (where, field, id_))
                if st.dicts[id_]["kind"] != kind:
                    raise LogError("%s: %s=%s is a %s, not a %s" % (
                        where, field, id_, st.dicts[id_]["kind"], kind))
            if e["type"] == "dict":
                defined.add(e["id"])
                old = st.dicts.get(e["id"])
                if old and {k: v for k, v in old.items() if k not in ENVELOPE} != \
                        {k: v for k, v in e.items() if k not in ENVELOPE}:
                    raise LogError("%s: dict id %s redefined differently" % (where, e["id"]))
                st.dicts[e["id"]] = e
            st.events.append(e)
        st.files.append((path, len(lines)))
    return sid, st


def prefixes(log_dir):
    out = set()
    for p in glob.glob(os.path.join(log_dir, "*.log*")):
        m = re.match(r"(.*)\.(device|scope|system)\.log(\.\d+(\.zst)?)?$", p)
        if m:
            out.add(m.group(1))
    return sorted(out)


def validate(log_dir, allow_partial=False, pruned_ok=False, complete=True,
             write_errors=False):
    """Every session in log_dir, checked.  complete: expect session_end."""
    sessions = {}
    for prefix in prefixes(log_dir):
        sess = None
        streams = STREAMS
        # gpufl idle watch writes a system stream only (docs/events.md,
        # "verdict"); every other writer writes all three
        if [s for s in STREAMS if _files(prefix, s)[0]] == ["system"]:
            streams = ("system",)
        for stream in streams:
            sid, st = read_stream(prefix, stream, allow_partial, pruned_ok,
                                  write_errors)
            if sess is None:
                sess = Session(sid)
            elif sid != sess.sid:
                raise LogError("%s: streams disagree on the session id" % prefix)
            sess.streams[stream] = st
            hdr = st.events[0]
            if sess.header is None:
                sess.header = hdr
            for k in ("app", "host", "pid", "start", "devices", "engines", "simulated"):
                if hdr.get(k) != sess.header.get(k):
                    raise LogError("%s: headers disagree on %s" % (prefix, k))
            if complete:
                last = st.events[-1]
                if last["type"] != "session_end":
                    raise LogError("%s.%s: last line is %s, not session_end"
                                   % (prefix, stream, last["type"]))
                if not pruned_ok and not write_errors and \
                        last["lines"] != len(st.events):
                    raise LogError("%s.%s: session_end says %d lines, read %d"
                                   % (prefix, stream, last["lines"], len(st.events)))
        # scopes balance: every begin has one end (same name/path/depth)
        sc = sess.streams["scope"]
        # lost lines (counted in loss lines) may be either half of a pair
        lossy = bool(sc.of("loss")) or not complete or pruned_ok or write_errors
        # a flight recorder dump starts and ends inside scopes
        lossy = lossy or sess.header.get("record") == "ring"
        opened = {}
        for e in sc.events:
            if e["type"] == "scope_begin":
                if e["id"] in opened:
                    raise LogError("scope %s begun twice" % e["id"])
                opened[e["id"]] = e
            elif e["type"] == "scope_end":
                b = opened.pop(e["id"], None)
                if b is None:
                    if not lossy:
                        raise LogError("scope_end %s without begin" % e["id"])
                    continue
                for k in ("name", "path", "depth", "tid"):
                    if b[k] != e[k]:
                        raise LogError("scope %s: %s differs at end" % (e["id"], k))
                if e["dur"] != e["ts"] - b["ts"]:
                    raise LogError("scope %s: dur != end - begin" % e["id"])
        if complete and opened and not lossy:
            raise LogError("%d scopes never ended" % len(opened))
        sessions[sess.sid] = sess
    return sessions
