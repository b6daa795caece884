"""test_capture.py - capture requests (docs/api.md "Capture requests") over
real HTTP on 127.0.0.1: who may queue, claim and answer them (the auth
matrix, checked before any body is read), the states a request goes
through, expiry, and malformed bodies.  The agent's side, end to end, is
tests/e2e/test_capture.py.

Run one class per ctest test: python3 test_capture.py Capture
"""
import json
import os
import shutil
import tempfile
import time
import unittest

import srvtest as T

HOST = "gpu-node-1"
OTHER = "gpu-node-2"


class Capture(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".", dir=T.TMP)
        self.servers = []

    def tearDown(self):
        # exit 0 asked of every server: a sanitizer report (the ASan build)
        # makes it exit otherwise
        try:
            for s in self.servers:
                s.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, args=()):
        s = T.Server(os.path.join(self.dir, "data%d" % len(self.servers)), args)
        self.servers.append(s)
        return s

    def key(self, srv, role, hosts=None):
        body = {"name": "k-%s-%s" % (role, hosts), "role": role}
        if hosts:
            body["hosts"] = hosts
        st, _, data = srv.req("POST", "/api/v1/keys", json.dumps(body))
        self.assertEqual(st, 201, data)
        return json.loads(data)["key"]

    def call(self, srv, method, path, body=None, token="admin"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        st, _, data = srv.req(method, path, body, token=token)
        return st, (T.api_json(data) if data else None)

    def queue(self, srv, host=HOST, **body):
        st, r = self.call(srv, "POST", "/api/v1/hosts/%s/captures" % host,
                          body or {"action": "dump"})
        self.assertEqual(st, 201, r)
        return r

    def test_auth_matrix(self):
        srv = self.server()
        tok = {"none": None, "bad": "not-a-key-0123456789",
               "read": self.key(srv, "read"),
               "ingest-any": self.key(srv, "ingest"),
               "ingest-host": self.key(srv, "ingest", [HOST]),
               "ingest-other": self.key(srv, "ingest", [OTHER]),
               "admin": self.key(srv, "admin"), "root": T.ADMIN}
        host_agents = {"admin", "root", "ingest-any", "ingest-host"}
        base = "/api/v1/hosts/%s/captures" % HOST
        for who, t in tok.items():
            # queue: the admin role only
            st, r = self.call(srv, "POST", base, {"action": "dump"}, token=t)
            want = (401 if who in ("none", "bad") else
                    201 if who in ("admin", "root") else 403)
            self.assertEqual(st, want, "POST captures as %s: %s" % (who, r))
            # claim: the admin role, or an ingest key that may write for HOST
            st, r = self.call(srv, "GET", base, token=t)
            want = (401 if who in ("none", "bad") else
                    200 if who in host_agents else 403)
            self.assertEqual(st, want, "GET captures as %s: %s" % (who, r))
            # list: read or admin
            st, r = self.call(srv, "GET", "/api/v1/captures", token=t)
            want = (401 if who in ("none", "bad") else
                    200 if who in ("read", "admin", "root") else 403)
            self.assertEqual(st, want, "GET /captures as %s: %s" % (who, r))
        # the result: a delivered request answered by each in turn
        for who, t in tok.items():
            req = self.queue(srv)
            st, got = self.call(srv, "GET", base)
            self.assertIn(req["id"], [i["id"] for i in got["items"]])
            st, r = self.call(srv, "POST", "%s/%d/result" % (base, req["id"]),
                              {"ok": True}, token=t)
            want = (401 if who in ("none", "bad") else
                    200 if who in host_agents else 403)
            self.assertEqual(st, want, "POST result as %s: %s" % (who, r))
        # refused before the body is read: the head alone is answered
        import http.client
        for who, want, path in (("ingest-other", 403, base),
                                ("read", 403, base), ("none", 401, base),
                                ("ingest-other", 403, base + "/1/result"),
                                ("read", 403, base + "/1/result")):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            c.putrequest("POST", path)
            if tok[who]:
                c.putheader("Authorization", "Bearer " + tok[who])
            c.putheader("Content-Length", str(100 << 10))
            c.endheaders()
            self.assertEqual(c.getresponse().status, want, (who, path))
            c.close()
        st, _, data = srv.req("GET", base, token=tok["ingest-other"])
        self.assertIn(b"not bound to this host", data)
        # another host's request cannot be answered through this host
        req = self.queue(srv, OTHER)
        self.call(srv, "GET", "/api/v1/hosts/%s/captures" % OTHER)
        st, r = self.call(srv, "POST", "%s/%d/result" % (base, req["id"]),
                          {"ok": True}, token=tok["ingest-host"])
        self.assertEqual(st, 404, r)
        st, r = self.call(srv, "GET", "/api/v1/captures/%d" % req["id"])
        self.assertEqual(r["state"], "delivered")

    def test_states(self):
        srv = self.server()
        agent = self.key(srv, "ingest", [HOST])
        a = self.queue(srv, action="trace", **{"for": "45s"}, note="slow step")
        b = self.queue(srv, action="dump", pid=4242)
        c = self.queue(srv, OTHER, action="trace")
        self.assertEqual((a["state"], a["action"], a["for_ms"], a["pid"],
                          a["note"], a["host"]),
                         ("pending", "trace", 45000, None, "slow step", HOST))
        self.assertEqual((b["pid"], b["for_ms"]), (4242, None))
        self.assertEqual(c["for_ms"], 30000)  # trace's default
        self.assertEqual(a["expires"] - a["created"], 600)  # the default
        base = "/api/v1/hosts/%s/captures" % HOST
        st, got = self.call(srv, "GET", base, token=agent)
        self.assertEqual(st, 200)
        self.assertEqual([i["id"] for i in got["items"]], [a["id"], b["id"]])
        self.assertTrue(all(i["state"] == "delivered" and i["delivered"]
                            for i in got["items"]))
        # handed out once
        st, got = self.call(srv, "GET", base, token=agent)
        self.assertEqual(got["items"], [])
        procs = [{"pid": 11, "ok": True, "prefix": "/logs/x", "dump": 1},
                 {"pid": 12, "ok": False, "error": "not in ring mode"}]
        st, r = self.call(srv, "POST", "%s/%d/result" % (base, a["id"]),
                          {"ok": True, "reason": "1 of 2", "processes": procs},
                          token=agent)
        self.assertEqual(st, 200, r)
        self.assertEqual((r["state"], r["reason"], r["processes"]),
                         ("done", "1 of 2", procs))
        st, r = self.call(srv, "POST", "%s/%d/result" % (base, b["id"]),
                          {"ok": False, "reason": "no process 4242"},
                          token=agent)
        self.assertEqual((r["state"], r["reason"], r["processes"]),
                         ("failed", "no process 4242", None))
        # answered once; a pending one is not waiting for an answer
        st, r = self.call(srv, "POST", "%s/%d/result" % (base, a["id"]),
                          {"ok": False}, token=agent)
        self.assertEqual(st, 409, r)
        st, r = self.call(srv, "POST", "/api/v1/hosts/%s/captures/%d/result"
                          % (OTHER, c["id"]), {"ok": True})
        self.assertEqual(st, 409, r)
        st, r = self.call(srv, "POST", "%s/999999/result" % base, {"ok": True})
        self.assertEqual(st, 404, r)
        # the list: newest first, filters, pages
        lst = srv.get("/api/v1/captures")
        self.assertEqual([i["id"] for i in lst["items"]],
                         [c["id"], b["id"], a["id"]])
        self.assertEqual([i["state"] for i in lst["items"]],
                         ["pending", "failed", "done"])
        self.assertEqual([i["id"] for i in srv.get(
            "/api/v1/captures?host=%s" % HOST)["items"]], [b["id"], a["id"]])
        self.assertEqual([i["id"] for i in srv.get(
            "/api/v1/captures?state=done")["items"]], [a["id"]])
        p1 = srv.get("/api/v1/captures?limit=2")
        self.assertEqual(len(p1["items"]), 2)
        p2 = srv.get("/api/v1/captures?limit=2&cursor=" + p1["next"])
        self.assertEqual([i["id"] for i in p2["items"]], [a["id"]])
        self.assertIsNone(p2["next"])
        st, _ = self.call(srv, "GET", "/api/v1/captures?state=lost")
        self.assertEqual(st, 400)
        st, _ = self.call(srv, "GET", "/api/v1/captures/777777")
        self.assertEqual(st, 404)
        self.assertEqual(srv.sql("SELECT max(version) FROM schema_version"),
                         [["37"]])

    def test_expiry(self):
        srv = self.server(["--capture-expiry", "1s", "--capture-lease", "1s"])
        base = "/api/v1/hosts/%s/captures" % HOST
        a = self.queue(srv)  # never picked up
        b = self.queue(srv, OTHER)  # picked up, never answered
        self.call(srv, "GET", "/api/v1/hosts/%s/captures" % OTHER)
        self.assertEqual(a["expires"] - a["created"], 1)
        time.sleep(2.2)
        st, got = self.call(srv, "GET", base)
        self.assertEqual(got["items"], [])  # not handed out once expired
        ra = srv.get("/api/v1/captures/%d" % a["id"])
        rb = srv.get("/api/v1/captures/%d" % b["id"])
        self.assertEqual(ra["state"], "expired")
        self.assertIn("no agent of the host picked it up within 1 s",
                      ra["reason"])
        self.assertEqual(rb["state"], "failed")
        self.assertIn("reported no outcome", rb["reason"])
        # a late outcome changes nothing
        st, r = self.call(srv, "POST", "/api/v1/hosts/%s/captures/%d/result"
                          % (OTHER, b["id"]), {"ok": True})
        self.assertEqual(st, 409, r)
        self.assertEqual(srv.get("/api/v1/captures/%d" % b["id"])["state"],
                         "failed")

    def test_lease(self):
        """An agent that claims and dies (reports nothing) does not lose the
        request: after --capture-lease it is handed to the next claim, at
        most --capture-attempts times, then it fails saying why.  The test
        is the agent: its claims are the HTTP exchange of gpufl-agent."""
        srv = self.server(["--capture-lease", "1s", "--capture-attempts", "2"])
        agent = self.key(srv, "ingest", [HOST])
        base = "/api/v1/hosts/%s/captures" % HOST

        def claim():
            st, got = self.call(srv, "GET", base, token=agent)
            self.assertEqual(st, 200, got)
            return [(i["id"], i["attempts"]) for i in got["items"]]

        a = self.queue(srv, action="dump", note="dies twice")
        self.assertEqual(a["attempts"], 0)
        # claimed late in a second and asked again just after it: times
        # are whole seconds, and a 1 s lease once ended right there
        # one reading of the clock: two could straddle .92 and ask a
        # negative sleep (CI at 3ad0b32)
        time.sleep((0.92 - time.time() % 1) % 1)
        second = int(time.time())
        self.assertEqual(claim(), [(a["id"], 1)])
        # just after the second the claim began in: from the claim's end,
        # a claim slow enough to end in the next second (a loaded machine)
        # slept on to .05 of the one after, past the lease
        time.sleep(max(0.0, second + 1.05 - time.time()))
        self.assertEqual(claim(), [])  # the lease holds
        time.sleep(2.1)  # the agent died: no outcome within the lease
        r = srv.get("/api/v1/captures/%d" % a["id"])
        self.assertEqual((r["state"], r["attempts"]), ("pending", 1))
        self.assertIn("handed out again", r["reason"])
        self.assertEqual(claim(), [(a["id"], 2)])  # the next agent gets it
        time.sleep(2.1)  # and dies too: the last attempt
        r = srv.get("/api/v1/captures/%d" % a["id"])
        self.assertEqual((r["state"], r["attempts"]), ("failed", 2))
        self.assertIn("handed out 2 times; no agent reported an outcome"
                      " within 1 s", r["reason"])
        self.assertEqual(claim(), [])

        # the second agent answers: done, once
        b = self.queue(srv, action="trace")
        self.assertEqual(claim(), [(b["id"], 1)])
        time.sleep(2.1)
        self.assertEqual(claim(), [(b["id"], 2)])
        procs = [{"pid": 7, "ok": True, "for_ms": 30000}]
        st, r = self.call(srv, "POST", "%s/%d/result" % (base, b["id"]),
                          {"ok": True, "processes": procs}, token=agent)
        self.assertEqual(st, 200, r)
        self.assertEqual((r["state"], r["attempts"], r["reason"]),
                         ("done", 2, None))
        time.sleep(2.1)  # a finished request is not handed out again
        self.assertEqual(claim(), [])

        # a slow agent answers after its lease ran out (the request back to
        # pending): the work was done, the outcome is taken
        c = self.queue(srv, action="dump")
        self.assertEqual(claim(), [(c["id"], 1)])
        time.sleep(2.1)
        self.assertEqual(srv.get("/api/v1/captures/%d" % c["id"])["state"],
                         "pending")
        st, r = self.call(srv, "POST", "%s/%d/result" % (base, c["id"]),
                          {"ok": True}, token=agent)
        self.assertEqual((st, r["state"]), (200, "done"), r)
        self.assertEqual(claim(), [])
        # never handed out: no outcome can be given for it
        d = self.queue(srv)
        st, r = self.call(srv, "POST", "%s/%d/result" % (base, d["id"]),
                          {"ok": True}, token=agent)
        self.assertEqual(st, 409, r)

    def test_malformed_bodies(self):
        srv = self.server()
        base = "/api/v1/hosts/%s/captures" % HOST
        bad = [
            ("", "one JSON object"), ("[]", "one JSON object"),
            ("{", "one JSON object"), ('{"action":"dump"} x', "one JSON object"),
            ("{}", "\"action\""), ('{"action":"stop"}', "\"action\""),
            ('{"action":5}', "\"action\""),
            ('{"action":"dump\\u0000"}', "\"action\""),
            ('{"action":"dump","pid":0}', "\"pid\""),
            ('{"action":"dump","pid":-3}', "\"pid\""),
            ('{"action":"dump","pid":"12"}', "\"pid\""),
            ('{"action":"dump","pid":99999999}', "\"pid\""),
            ('{"action":"dump","pid":1.5}', "\"pid\""),
            ('{"action":"trace","for":"forever"}', "\"for\""),
            ('{"action":"trace","for":30}', "\"for\""),
            ('{"action":"trace","for":"0s"}', "\"for\""),
            ('{"action":"trace","for":"2d"}', "\"for\""),
            ('{"action":"dump","for":"30s"}', "goes with \"trace\""),
            ('{"action":"dump","note":"tab\\there"}', "\"note\""),
            ('{"action":"dump","note":"%s"}' % ("n" * 201), "\"note\""),
            ('{"action":"dump","Action":"dump"}', "unknown member"),
            ('{"action":"dump","action":"trace"}', "given twice"),
        ]
        for body, why in bad:
            st, _, data = srv.req("POST", base, body)
            self.assertEqual(st, 400, (body, data))
            self.assertIn(why, json.loads(data)["error"], body)
        st, _, data = srv.req("POST", base, '{"action":"dump","note":"%s"}'
                              % ("n" * 5000))
        self.assertEqual(st, 413, data)
        st, _, data = srv.req("POST", "/api/v1/hosts/bad%20host/captures",
                              '{"action":"dump"}')
        self.assertEqual(st, 400, data)
        # nothing was queued by any of them
        self.assertEqual(srv.get("/api/v1/captures")["items"], [])
        # results: strict too
        req = self.queue(srv)
        self.call(srv, "GET", base)
        res = "%s/%d/result" % (base, req["id"])
        for body, why in [("{}", "\"ok\""), ('{"ok":1}', "\"ok\""),
                          ('{"ok":true,"extra":1}', "unknown member"),
                          ('{"ok":true,"reason":5}', "\"reason\""),
                          ('{"ok":true,"processes":{}}', "\"processes\""),
                          ('{"ok":true,"processes":[1]}', "\"processes\""),
                          ('{"ok":true,"processes":[%s]}' % ",".join(
                              ['{"pid":1,"error":"%s"}' % ("e" * 300)] * 60),
                           "\"processes\"")]:
            st, _, data = srv.req("POST", res, body)
            self.assertEqual(st, 400, (body, data))
            self.assertIn(why, json.loads(data)["error"], body)
        self.assertEqual(srv.get("/api/v1/captures/%d" % req["id"])["state"],
                         "delivered")
        # at most 64 wait per host; another host is not held up
        for i in range(64):
            self.queue(srv)
        st, _, data = srv.req("POST", base, '{"action":"dump"}')
        self.assertEqual(st, 429, data)
        self.queue(srv, OTHER)


if __name__ == "__main__":
    unittest.main()
