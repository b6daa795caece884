"""test_memprof_retention.py - retention of memory profiles in gpufl-server
(docs/server.md, "Retention"): profiles POSTed to /api/v1/memprof with old
and new end times, retention run through POST /api/v1/admin/retention and
on the maintenance thread's schedule, and the database read back directly:
exactly the old profiles are gone, with every one of their stack rows (no
orphan in memsamples), kept sessions keep theirs, and a pruned session's
profiles outlive it unlinked.  The same on PostgreSQL when
GPUFL_TEST_PG_URI_FILE names a throwaway cluster (tests/server).

Run: python3 test_memprof_retention.py -v
"""
import json
import os
import re
import shutil
import tempfile
import time
import unittest
import uuid

import srvtest as T

NS = 1000000000
DAY = 86400


def profile(pid, end_s, sid=None, nstacks=3, pad=0, tag="p"):
    """A memory profile body ending end_s seconds from now."""
    end = int((time.time() + end_s) * NS)
    stacks = []
    for i in range(nstacks):
        frames = ["main", "%s_%d" % (tag, i)]
        if pad:
            frames += ["%s_pad_%d_%d_%s" % (tag, i, k, "x" * 80)
                       for k in range(pad)]
        frames.append("cuMemAlloc_v2")
        stacks.append({"frames": frames, "alloc_bytes": 1000 + i,
                       "alloc_count": 1, "free_bytes": 0, "free_count": 0,
                       "inuse_bytes": 1000 + i, "inuse_count": 1,
                       "fail_bytes": 0, "fail_count": 0})
    body = {"v": 1, "host": "retention-host", "pid": pid, "comm": "prog",
            "start": end - 10 * NS, "end": end, "source": "preload",
            "simulated": False, "stacks": stacks}
    if sid:
        body["sid"] = sid
    return body


class MemprofRetention(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".",
                                    dir=T.TMP)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.p.poll() is None:
                s.stop(check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, name="data", args=()):
        s = T.Server(os.path.join(self.dir, name), args)
        self.servers.append(s)
        return s

    def logs(self, i, steps=3):
        """A real session's logs from the client's workload program."""
        return list(T.make_logs(os.path.join(self.dir, "logs%d" % i),
                                "workload", steps).values())[0]

    def sessions(self, srv, n, steps=3):
        """n real sessions, stored; their ids."""
        out = []
        for i in range(n):
            s = self.logs(i, steps)
            T.send_session(srv, s)
            out.append(s.sid)
        return out

    def post(self, srv, body):
        st, _, data = srv.req("POST", "/api/v1/memprof",
                              json.dumps(body).encode(),
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 200, data)
        return json.loads(data)

    def retention(self, srv, query):
        st, _, data = srv.req("POST", "/api/v1/admin/retention?" + query)
        self.assertEqual(st, 200, data)
        return json.loads(data)

    def ids(self, srv):
        return {int(r[0]) for r in srv.sql("SELECT id FROM memprofs")}

    def no_orphans(self, srv):
        """Every memsamples row belongs to a stored profile, and every
        stored profile has all its stack rows."""
        orphans = srv.sql("SELECT count(*) FROM memsamples WHERE prof NOT IN"
                          " (SELECT id FROM memprofs)")[0][0]
        self.assertEqual(orphans, "0", "orphan memsamples rows")
        for pid_, n, have in srv.sql(
                "SELECT p.id, p.nstacks, (SELECT count(*) FROM memsamples m"
                " WHERE m.prof=p.id) FROM memprofs p"):
            self.assertEqual(n, have, "profile %s lost stack rows" % pid_)

    def db_bytes(self, srv):
        m = srv.req("GET", "/metrics")[2].decode()
        return int(re.search(r"^gpufl_db_bytes (\d+)", m, re.M).group(1))

    def test_frames_round_trip(self):
        """Frames with the bytes PostgreSQL's COPY text format escapes
        (backslash, tab, newline, CR) and non-ASCII come back as sent."""
        srv = self.server()
        odd = ["main", "a\\b", "tab\there", "nl\nx", "cr\ry", "quote\"q",
               "\u00e9t\u00e9 \u6f22", "back\\\\slash\\t"]
        body = profile(4242, 0, nstacks=2)
        body["host"] = "roundtrip"
        body["stacks"][0]["frames"] = odd
        self.post(srv, body)
        st, _, data = srv.req("GET", "/api/v1/memory?host=roundtrip&limit=10")
        self.assertEqual(st, 200, data)
        frames = [s["frames"] for s in T.api_json(data)["stacks"]]
        self.assertIn(odd, frames)
        self.no_orphans(srv)

    def test_age_keep_and_unlink(self):
        srv = self.server()
        kept, live = self.sessions(srv, 2)
        # a profile posted before its session's first line: linked by its
        # sid only, and kept with that session all the same
        early = self.logs(2)
        p = {"old8_early_kept": self.post(srv, profile(
            199, -8 * DAY, sid=early.sid))}
        self.assertIn(srv.sql("SELECT sess IS NULL FROM memprofs")[0][0],
                      ("1", "t"))
        T.send_session(srv, early)
        for sid in (kept, early.sid):
            st, _, _ = srv.req("PUT", "/api/v1/sessions/%s/keep" % sid,
                               b'{"keep": true}')
            self.assertEqual(st, 200)
        for i in range(3):  # unlinked, ended 10 days ago
            p["old10_%d" % i] = self.post(srv, profile(100 + i, -10 * DAY))
        p["old9_unstored"] = self.post(srv, profile(
            200, -9 * DAY, sid=str(uuid.uuid4())))
        p["old8_live"] = self.post(srv, profile(201, -8 * DAY, sid=live))
        p["old8_kept"] = self.post(srv, profile(202, -8 * DAY, sid=kept))
        p["new_unlinked"] = self.post(srv, profile(203, -3600))
        p["new_live"] = self.post(srv, profile(204, -3600, sid=live))
        self.assertEqual(p["old8_kept"]["sid"], kept)
        self.assertEqual(p["new_live"]["sid"], live)
        pid = {k: v["profile"] for k, v in p.items()}
        self.assertEqual(self.ids(srv), set(pid.values()))
        self.no_orphans(srv)

        # max_age alone: profiles follow it (memprof_max_age 0); the two
        # sessions were just received and stay
        r = self.retention(srv, "max_age=%d" % int(9.5 * DAY))
        self.assertEqual(r, {"pruned": 0, "memprofs": 3})
        gone = {pid["old10_%d" % i] for i in range(3)}
        self.assertEqual(self.ids(srv), set(pid.values()) - gone)
        self.no_orphans(srv)

        # memprof_max_age alone: the 9- and 8-day-old profiles, not the
        # one of the kept session
        r = self.retention(srv, "memprof_max_age=%d" % DAY)
        self.assertEqual(r, {"pruned": 0, "memprofs": 2})
        left = {pid["old8_kept"], pid["old8_early_kept"], pid["new_unlinked"],
                pid["new_live"]}
        self.assertEqual(self.ids(srv), left)
        self.no_orphans(srv)
        self.assertEqual(len(srv.sql("SELECT id FROM sessions")), 3)
        got = srv.get("/api/v1/sessions/%s/memory" % kept)
        self.assertEqual(got["profiles"], 1)
        self.assertEqual(got["total_bytes"], 1000 + 1001 + 1002)
        items = T.page_all(srv, "/api/v1/memory/profiles")
        self.assertEqual({i["id"] for i in items}, left)

        # the live session pruned by age: its profile outlives it unlinked
        # (sess NULL, its sid kept) and still answers by sid
        time.sleep(2.2)
        r = self.retention(srv, "max_age=1&memprof_max_age=%d" % (1 << 30))
        self.assertEqual(r, {"pruned": 1, "memprofs": 0})
        self.assertEqual(srv.req("GET", "/api/v1/sessions/" + live)[0], 404)
        row = srv.sql("SELECT sess IS NULL, sid FROM memprofs WHERE id=%d" %
                      pid["new_live"])[0]
        self.assertIn(row[0], ("1", "t"))
        self.assertEqual(row[1], live)
        got = srv.get("/api/v1/sessions/%s/memory" % live)
        self.assertEqual(got["profiles"], 1)
        self.assertEqual(self.ids(srv), left)

        # everything not kept, by size
        r = self.retention(srv, "max_db_bytes=1")
        self.assertEqual(r, {"pruned": 0, "memprofs": 2})
        self.assertEqual(self.ids(srv), {pid["old8_kept"],
                                         pid["old8_early_kept"]})
        self.no_orphans(srv)
        self.assertEqual(srv.get("/api/v1/sessions/%s/memory" % kept)
                         ["profiles"], 1)
        srv.stop()

    def test_size_oldest_first(self):
        """max_db_bytes removes the oldest first, sessions (by last line
        received) and profiles (by end) in one order."""
        srv = self.server()
        # big enough that deleting it frees whole pages
        sess, kept = self.sessions(srv, 2, steps=40)
        srv.req("PUT", "/api/v1/sessions/%s/keep" % kept, b"{}")
        big = {}
        for d in (4, 3, 2, 1):  # days ago
            big[d] = self.post(srv, profile(300 + d, -d * DAY, nstacks=400,
                                            pad=4, tag="d%d" % d))["profile"]
        newer = self.post(srv, profile(310, 3600, nstacks=400, pad=4,
                                       tag="n"))["profile"]
        keptp = self.post(srv, profile(311, -30 * DAY, sid=kept))["profile"]
        self.no_orphans(srv)
        if srv.pgdb:
            # pg_database_size does not shrink after DELETE (until VACUUM
            # FULL): one pass over any cap removes everything prunable
            r = self.retention(srv, "max_db_bytes=1")
            self.assertEqual(r, {"pruned": 1, "memprofs": 5})
        else:
            order = [("m", big[4]), ("m", big[3]), ("m", big[2]),
                     ("m", big[1]), ("s", sess), ("m", newer)]
            for kind, what in order:
                b = self.db_bytes(srv)
                r = self.retention(srv, "max_db_bytes=%d" % (b - 1))
                if kind == "m":
                    self.assertEqual(r, {"pruned": 0, "memprofs": 1}, what)
                    self.assertNotIn(what, self.ids(srv))
                else:
                    self.assertEqual(r, {"pruned": 1, "memprofs": 0})
                    self.assertEqual(
                        srv.req("GET", "/api/v1/sessions/" + what)[0], 404)
                self.assertLess(self.db_bytes(srv), b)
                self.no_orphans(srv)
            r = self.retention(srv, "max_db_bytes=1")
            self.assertEqual(r, {"pruned": 0, "memprofs": 0})
        self.assertEqual(self.ids(srv), {keptp})
        self.assertEqual([r[0] for r in srv.sql("SELECT sid FROM sessions")],
                         [kept])
        self.no_orphans(srv)
        srv.stop()

    def test_scheduled(self):
        """--memprof-max-age on the maintenance thread, sessions untouched
        (--retention-max-age 0)."""
        srv = self.server(args=["--memprof-max-age", "2d",
                                "--retention-interval", "1s"])
        old = self.post(srv, profile(400, -3 * DAY, nstacks=50))["profile"]
        new = self.post(srv, profile(401, -1 * DAY, nstacks=50))["profile"]
        deadline = time.time() + 20
        while time.time() < deadline and old in self.ids(srv):
            time.sleep(0.2)
        self.assertEqual(self.ids(srv), {new})
        self.no_orphans(srv)
        srv.stop()
        # a bad value is a usage error naming the flag
        r = T.subprocess.run([T.SERVER, "--memprof-max-age", "2x"],
                             capture_output=True, text=True,
                             env=T.clean_env())
        self.assertEqual(r.returncode, 2)
        self.assertIn("memprof-max-age", r.stderr)


if __name__ == "__main__":
    unittest.main()
