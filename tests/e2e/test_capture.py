"""test_capture.py - a capture request end to end (docs/api.md "Capture
requests", docs/agent.md): an admin POSTs it to gpufl-server, gpufl-agent
--captures claims it and forwards it to a running program's control
socket, the program (tests/client/prog_ring.c) dumps its flight-recorder
window, the agent ships the dump like any session, and the request says
what happened.  The real binaries on 127.0.0.1.

When the test may make a network namespace (root), everything runs in one
of its own: its abstract control sockets are then the only ones the agent
sees, so a request for every process of the host reaches only this test's
programs, never another test's running beside it.

Environment: GPUFL_BIN_DIR, GPUFL_TEST_TMP.
"""
import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import srvtest as st  # noqa: E402
from srvtest import gl  # noqa: E402

BIN = st.BIN
HOST = socket.gethostname()
CLONE_NEWNET = 0x40000000


def private_net():
    """This process (and what it starts) in a network namespace of its
    own with its loopback up; False when that is not allowed."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        return False
    r = subprocess.run(["ip", "link", "set", "lo", "up"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise AssertionError("in a new network namespace, lo stays down: %s"
                             % r.stdout)
    return True


ISOLATED = private_net()


def prog_env(log_dir, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    env.update({"GPUFL_LOG_DIR": log_dir, "GPUFL_ENGINES": "host",
                "GPUFL_SYSTEM_INTERVAL_MS": "100", "GPUFL_RECORD": "ring:10s",
                "GPUFL_TRIGGER_AFTER": "300ms"})
    env.update({"GPUFL_" + k.upper(): str(v) for k, v in kw.items()})
    return env


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".",
                                    dir=st.TMP)
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs)
        self.cue = os.path.join(self.dir, "cue")
        self.procs = []
        self.agent = None
        self.srv = st.Server(os.path.join(self.dir, "srv"))

    def tearDown(self):
        open(self.cue, "w").close()
        errs = []
        for p in self.procs:
            try:
                errs.append(p.communicate(timeout=60)[1])
            except subprocess.TimeoutExpired:
                p.kill()
                errs.append(p.communicate()[1])
        try:
            # exit 0 asked of each: a sanitizer report makes it exit otherwise
            self.stop_agent()
            self.srv.stop()
            for p, err in zip(self.procs, errs):
                self.assertEqual(p.returncode, 0, err)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def key(self, hosts):
        s, _, data = self.srv.req("POST", "/api/v1/keys", json.dumps(
            {"name": "agent", "role": "ingest", "hosts": hosts}))
        self.assertEqual(s, 201, data)
        return json.loads(data)["key"]

    def start_prog(self, **kw):
        """prog_ring works, says its pid, waits for the cue."""
        p = subprocess.Popen([BIN + "/prog_ring", "work:300", "flush", "pid",
                              "wait:" + self.cue, "work:50"],
                             env=prog_env(self.logs, **kw),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.procs.append(p)
        line = p.stdout.readline()
        if not line.startswith("pid "):
            self.fail(line + p.stderr.read())
        return p, int(line.split()[1])

    def start_agent(self, token):
        self.agent_log = st.child_output(os.path.join(self.dir, "agent.log"))
        env = st.clean_env()
        env["GPUFL_AGENT_TOKEN"] = token
        self.agent = subprocess.Popen(
            [BIN + "/gpufl-agent", "--folder", self.logs, "--url",
             "http://127.0.0.1:%d/api/v1/events/" % self.srv.port,
             "--cursor-file", os.path.join(self.dir, "cursor"),
             "--captures", "--captures-poll", "200ms", "--poll-ms", "100",
             "--stats-s", "0"],
            stdout=self.agent_log, stderr=subprocess.STDOUT, env=env)

    def stop_agent(self):
        if self.agent and self.agent.poll() is None:
            self.agent.terminate()
            self.agent.wait(60)
        if self.agent:
            out = self.agent_output()
            self.agent_log.close()
            self.assertEqual(self.agent.returncode, 0, out)

    def agent_output(self):
        self.agent_log.seek(0)
        return self.agent_log.read()

    def request(self, **body):
        s, _, data = self.srv.req("POST", "/api/v1/hosts/%s/captures" % HOST,
                                  json.dumps(body))
        self.assertEqual(s, 201, data)
        return json.loads(data)["id"]

    def wait_state(self, rid, states=("done", "failed"), timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.srv.get("/api/v1/captures/%d" % rid)
            if r["state"] in states:
                return r
            time.sleep(0.1)
        self.fail("request %d still %s; agent said:\n%s"
                  % (rid, r["state"], self.agent_output()))

    def stored_sessions(self, want, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            items = self.srv.get("/api/v1/sessions")["items"]
            if len(items) >= want:
                return items
            time.sleep(0.1)
        self.fail("the server has %d sessions, not %d" % (len(items), want))


class Capture(Base):
    def test_dump_reaches_the_process_and_its_dump_the_server(self):
        p, pid = self.start_prog()
        self.start_agent(self.key([HOST]))
        rid = self.request(pid=pid, action="dump", note="asked by e2e")
        r = self.wait_state(rid)
        self.assertEqual(r["state"], "done", r)
        self.assertEqual(r["reason"], "1 of 1 processes: ok")
        (pr,) = r["processes"]
        self.assertEqual((pr["pid"], pr["ok"], pr["dump"]), (pid, True, 1), r)
        self.assertTrue(os.path.exists(pr["prefix"] + ".device.log"))
        # the program ends: its dump's live part ends with it
        open(self.cue, "w").close()
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0)
        (sess,) = gl.validate(self.logs).values()
        trig = sess.streams["device"].events[1]
        self.assertEqual((trig["type"], trig["trigger"], trig["detail"]),
                         ("trigger", "ctl",
                          "server capture %d: asked by e2e" % rid))
        want = sum(len(s.events) for s in sess.streams.values())
        # shipped like any session: every line of the dump, once
        deadline = time.time() + 60
        while time.time() < deadline:
            (item,) = self.stored_sessions(1)
            if item["state"] == "ended" and item["counts"]["lines"] == want:
                break
            time.sleep(0.1)
        self.assertEqual((item["id"], item["state"], item["counts"]["lines"]),
                         (sess.sid, "ended", want))
        one = self.srv.get("/api/v1/sessions/" + sess.sid)
        self.assertEqual((one["record"], one["dump"]), ("ring", 1))
        rows = self.srv.sql("SELECT body FROM lines l JOIN sessions s ON"
                            " s.id=l.sess WHERE s.sid='%s' AND l.body LIKE"
                            " '%%\"type\":\"trigger\"%%'" % sess.sid)
        self.assertEqual(len(rows), 3, rows)  # one per stream
        for (body,) in rows:
            self.assertEqual(json.loads(body)["detail"],
                             "server capture %d: asked by e2e" % rid)

    def test_a_refusal_is_the_outcome(self):
        p, pid = self.start_prog(record="file")
        self.start_agent(self.key([HOST]))
        rid = self.request(pid=pid, action="dump")
        r = self.wait_state(rid)
        self.assertEqual(r["state"], "failed", r)
        (pr,) = r["processes"]
        self.assertEqual((pr["pid"], pr["ok"]), (pid, False))
        self.assertIn("not in ring mode", pr["error"])
        self.assertIn("0 of 1 processes: ok; pid %d: not in ring mode" % pid,
                      r["reason"])
        # trace without CUPTI (engines host): refused by the process too
        rid = self.request(pid=pid, action="trace", **{"for": "2s"})
        r = self.wait_state(rid)
        self.assertEqual(r["state"], "failed", r)
        self.assertFalse(r["processes"][0]["ok"])
        # a process that is not there
        rid = self.request(pid=4194000, action="dump")
        r = self.wait_state(rid)
        self.assertEqual(r["state"], "failed", r)
        self.assertIn("no control socket for pid 4194000", r["reason"])

    def test_an_agent_killed_after_claiming(self):
        """A request claimed by an agent that is then killed (SIGKILL, while
        it waits for the process's answer) is handed to the next agent once
        the claim's lease (--capture-lease 3s) has run out, and its outcome
        is taken.  (1 s was too short on a crowded machine: the lease ran
        out between the agent's question and the test's look at the
        state, which read "pending".)  The "process" is a control socket of this test's own
        (its pid): silent to the first connection, answering the second."""
        self.srv.stop()
        self.srv = st.Server(os.path.join(self.dir, "srv2"),
                             ["--capture-lease", "3s"])
        key = self.key([HOST])
        pid = os.getpid()
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind("\0gpufl-ctl.%d" % pid)
        ls.listen(4)

        def unbind():
            # wakes the thread in accept(), so the name goes with the test
            # (test_every_process_of_the_host found it left behind)
            try:
                ls.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            ls.close()
        self.addCleanup(unbind)
        held, asked = [], []
        answer = (b'{"ok":true,"cmd":"dump","dump":1,'
                  b'"prefix":"/tmp/fake-dump","live":true}\n')

        def serve():
            for n in range(2):
                c, _ = ls.accept()
                req = b""
                while not req.endswith(b"\n"):  # the whole line
                    b = c.recv(2048)
                    if not b:
                        break
                    req += b
                asked.append(req)
                if n == 0:
                    held.append(c)  # never answered: the agent waits
                else:
                    c.sendall(answer)
                    c.close()
        threading.Thread(target=serve, daemon=True).start()
        rid = self.request(pid=pid, action="dump", note="lease")
        self.start_agent(key)
        first = self.agent
        deadline = time.time() + 30
        while not asked and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(asked), 1, self.agent_output())
        r = self.srv.get("/api/v1/captures/%d" % rid)
        self.assertEqual((r["state"], r["attempts"]), ("delivered", 1))
        first.kill()  # SIGKILL, between its claim and its report
        first.wait(30)
        self.agent_log.close()
        self.agent = None
        r = self.wait_state(rid, states=("pending",), timeout=30)
        self.assertIn("handed out again", r["reason"])
        self.start_agent(key)
        r = self.wait_state(rid)
        self.assertEqual((r["state"], r["attempts"]), ("done", 2), r)
        (pr,) = r["processes"]
        self.assertEqual((pr["pid"], pr["ok"], pr["dump"]), (pid, True, 1))
        self.assertEqual(len(asked), 2)
        self.assertTrue(all(a.startswith(b"dump server capture %d: lease"
                                         % rid) for a in asked), asked)
        for c in held:
            c.close()

    def test_a_key_of_another_host_claims_nothing(self):
        p, pid = self.start_prog()
        self.start_agent(self.key(["some-other-host"]))
        rid = self.request(pid=pid, action="dump")
        deadline = time.time() + 30
        while "refused" not in self.agent_output() and time.time() < deadline:
            time.sleep(0.1)
        self.assertIn("ingest key bound to this host", self.agent_output())
        time.sleep(0.5)  # more polls than one
        self.assertEqual(self.srv.get("/api/v1/captures/%d" % rid)["state"],
                         "pending")
        self.assertEqual(os.listdir(self.logs), [])  # nothing was dumped

    def test_bad_configurations_are_refused(self):
        env = st.clean_env()
        base = [BIN + "/gpufl-agent", "--folder", self.logs, "--captures",
                "--cursor-file", os.path.join(self.dir, "cursor")]
        for extra, rc, why in [
                (["--type", "kafka", "--brokers", "127.0.0.1:1"], 2,
                 "--captures needs --type=http"),
                (["--url", "http://127.0.0.1:1/ingest/"], 2,
                 "--captures needs --type=http"),
                (["--url", "http://127.0.0.1:1/api/v1/events/",
                  "--captures-host", "bad host"], 1,
                 "no usable host name")]:
            r = subprocess.run(base + extra, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            self.assertEqual(r.returncode, rc, (extra, r.stdout))
            self.assertIn(why, r.stdout, extra)

    @unittest.skipUnless(ISOLATED, "needs a network namespace of its own "
                         "(root): other tests' programs would be asked too")
    def test_every_process_of_the_host(self):
        ring, rpid = self.start_prog()
        file_, fpid = self.start_prog(record="file")
        self.start_agent(self.key([HOST]))
        rid = self.request(action="dump")
        r = self.wait_state(rid)
        self.assertEqual(r["state"], "done", r)  # one of them could
        got = {x["pid"]: x for x in r["processes"]}
        self.assertEqual(set(got), {rpid, fpid})
        self.assertTrue(got[rpid]["ok"])
        self.assertFalse(got[fpid]["ok"])
        self.assertIn("1 of 2 processes: ok; pid %d: not in ring mode" % fpid,
                      r["reason"])


if __name__ == "__main__":
    unittest.main()
