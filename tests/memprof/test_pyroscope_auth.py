#!/usr/bin/env python3
"""test_pyroscope_auth.py - authentication of `gpufl memprof --pyroscope`
(docs/memprof.md, "Pyroscope"): the real profiler runs the workload under
--preload and pushes to a local HTTP catcher that records every request's
headers and answers as told.  Checks the exact Authorization and
X-Scope-OrgID headers for basic auth (password from a file and from
GPUFL_PYROSCOPE_PASSWORD), bearer tokens (file and GPUFL_PYROSCOPE_TOKEN)
and no auth; the error text on 401/403 (names the flag to fix, said once);
that a secret never appears in any output; user:password@ URLs and other
misuse refused as usage errors before anything runs.

Run: test_pyroscope_auth.py --gpufl BIN --prog PROG --preload-lib SO --tmp DIR
"""
import argparse
import base64
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import memprof_common  # check() and its failure count
from memprof_common import check

PASSWORD = "pw-Zq8!x7 secret"  # a space and punctuation, as real ones have
TOKEN_FILE = "glc_tokFILE0123456789abcdef"
TOKEN_ENV = "glc_tokENV9876543210fedcba"
SECRETS = (PASSWORD, TOKEN_FILE, TOKEN_ENV)


class Catcher:
    """A Pyroscope stand-in: records (path, headers) of each POST and
    answers status (and body)."""

    def __init__(self, status=200, body=b""):
        self.got = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self.rfile.read(n)
                outer.got.append((self.path, {k.lower(): v for k, v in
                                              self.headers.items()}))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def env_without_secrets(extra=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("GPUFL_PYROSCOPE_")}
    e.update(extra or {})
    return e


def run(a, args, env=None, url=None, status=200, body=b""):
    """gpufl memprof --preload over the workload with --pyroscope and args;
    returns (CompletedProcess, [(path, headers)], the catcher's URL)."""
    c = Catcher(status, body)
    try:
        cmd = [a.gpufl, "memprof", "--preload-lib", a.preload_lib,
               "--pyroscope", url or c.url, "--interval", "600",
               "--output", os.devnull] + args + ["--preload", "--", a.prog,
                                                 a.go]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           env=env_without_secrets(env))
    finally:
        c.close()
    for s in SECRETS:
        check(s not in r.stdout and s not in r.stderr,
              "no secret in the output of %s" % " ".join(args or ["(none)"]))
    return r, c.got, c.url


def basic(user, pw):
    return "Basic " + base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()


def pushes_ok(what, r, got, auth, tenant):
    check(r.returncode == 0, "%s: exit 0 (%d) %s" % (what, r.returncode,
                                                      r.stderr.strip()))
    check(len(got) == 4 and all(p.startswith("/ingest?") for p, _ in got),
          "%s: the 4 sample types pushed (%d requests)" % (what, len(got)))
    check(all(h.get("authorization") == auth for _, h in got),
          "%s: Authorization is exactly %r (got %r)" %
          (what, auth, sorted({h.get("authorization") for _, h in got},
                              key=str)))
    check(all(h.get("x-scope-orgid") == tenant for _, h in got),
          "%s: X-Scope-OrgID is exactly %r" % (what, tenant))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpufl", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--preload-lib", required=True)
    ap.add_argument("--tmp", required=True)
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    d = tempfile.mkdtemp(prefix="pyroauth.", dir=a.tmp)
    a.go = os.path.join(d, "go")
    open(a.go, "w").close()
    pwf = os.path.join(d, "password")
    with open(pwf, "w") as f:
        f.write(PASSWORD + "\n")
    tokf = os.path.join(d, "token")
    with open(tokf, "w") as f:
        f.write(TOKEN_FILE + "\r\n")
    os.chmod(pwf, 0o600)
    os.chmod(tokf, 0o600)
    try:
        # basic auth, password from a file, with a tenant
        r, got, url = run(a, ["--pyroscope-user", "123456",
                              "--pyroscope-password-file", pwf,
                              "--pyroscope-tenant", "team-a"])
        pushes_ok("basic (file) + tenant", r, got, basic("123456", PASSWORD),
                  "team-a")
        # basic auth, password from the environment; the file wins over it
        r, got, url = run(a, ["--pyroscope-user", "alice"],
                          env={"GPUFL_PYROSCOPE_PASSWORD": PASSWORD})
        pushes_ok("basic (environment)", r, got, basic("alice", PASSWORD),
                  None)
        r, got, url = run(a, ["--pyroscope-user", "bob",
                              "--pyroscope-password-file", pwf],
                          env={"GPUFL_PYROSCOPE_PASSWORD": TOKEN_ENV})
        pushes_ok("basic (file over environment)", r, got,
                  basic("bob", PASSWORD), None)
        # bearer token: from the file (wins over the environment), then
        # from the environment alone
        r, got, url = run(a, ["--pyroscope-token-file", tokf],
                          env={"GPUFL_PYROSCOPE_TOKEN": TOKEN_ENV})
        pushes_ok("bearer (file)", r, got, "Bearer " + TOKEN_FILE, None)
        r, got, url = run(a, ["--pyroscope-tenant", "t1"],
                          env={"GPUFL_PYROSCOPE_TOKEN": TOKEN_ENV})
        pushes_ok("bearer (environment) + tenant", r, got,
                  "Bearer " + TOKEN_ENV, "t1")
        # nothing given: no Authorization, no tenant
        r, got, url = run(a, [])
        pushes_ok("no auth", r, got, None, None)

        # 401 with basic auth: one clear error naming the flags, the round
        # stopped after the first refusal, exit status 1
        r, got, url = run(a, ["--pyroscope-user", "alice",
                              "--pyroscope-password-file", pwf], status=401)
        err = r.stderr.strip().splitlines()
        check(r.returncode == 1, "401: exit 1 (%d)" % r.returncode)
        check(len(got) == 1, "401: no request after the refusal (%d)" %
              len(got))
        check(len(err) == 1 and err[0] ==
              "gpufl memprof: Pyroscope at %s refused the push (HTTP 401 "
              "Unauthorized): check --pyroscope-user and its password "
              "(--pyroscope-password-file or GPUFL_PYROSCOPE_PASSWORD)" %
              url, "401 (basic): the error text %r" % err)
        # 401 without credentials: says which flags give them
        r, got, url = run(a, [], status=401)
        check(r.returncode == 1 and "it wants credentials: "
              "--pyroscope-token-file (or GPUFL_PYROSCOPE_TOKEN), or "
              "--pyroscope-user with --pyroscope-password-file (or "
              "GPUFL_PYROSCOPE_PASSWORD)" in r.stderr,
              "401 (none): the error names the flags %r" % r.stderr.strip())
        # 403 with a token and a tenant: token and tenant flags named
        r, got, url = run(a, ["--pyroscope-token-file", tokf,
                              "--pyroscope-tenant", "team-b"], status=403)
        check(r.returncode == 1 and "(HTTP 403 Forbidden): check the token "
              "(--pyroscope-token-file or GPUFL_PYROSCOPE_TOKEN); and the "
              "tenant (--pyroscope-tenant)" in r.stderr,
              "403: the error names token and tenant %r" % r.stderr.strip())
        # other errors quote the server's answer, unless it holds a secret
        r, got, url = run(a, [], status=500,
                          body=b"ingest failed: disk full\n")
        check(r.returncode == 1 and "(HTTP 500): ingest failed: disk full"
              in r.stderr, "500: the answer quoted %r" % r.stderr.strip())
        r, got, url = run(a, ["--pyroscope-user", "alice",
                              "--pyroscope-password-file", pwf], status=500,
                          body=("bad password " + PASSWORD).encode())
        check(r.returncode == 1 and "(HTTP 500)\n" in r.stderr,
              "500 echoing the password: answer not quoted")

        # misuse: usage errors (2) before anything runs
        c = Catcher()
        try:
            host = c.url.split("//")[1]
            bad = [
                (["--pyroscope", "http://alice:%s@%s" % (PASSWORD, host)],
                 "must not contain user:password@"),
                (["--pyroscope", "http://alice@%s" % host],
                 "must not contain user:password@"),
                (["--pyroscope", c.url, "--pyroscope-user", "alice"],
                 "--pyroscope-user needs a password: "
                 "--pyroscope-password-file FILE or GPUFL_PYROSCOPE_PASSWORD"),
                (["--pyroscope", c.url, "--pyroscope-user", "alice",
                  "--pyroscope-token-file", tokf], "not both"),
                (["--pyroscope", c.url, "--pyroscope-password-file", pwf],
                 "--pyroscope-password-file needs --pyroscope-user"),
                (["--pyroscope", c.url, "--pyroscope-user", "a:b",
                  "--pyroscope-password-file", pwf], "without ':'"),
                (["--pyroscope", c.url, "--pyroscope-user", "alice",
                  "--pyroscope-password-file", os.path.join(d, "nope")],
                 "--pyroscope-password-file %s: No such file" %
                 os.path.join(d, "nope")),
                (["--pyroscope", c.url, "--pyroscope-tenant", "a\r\nX: y"],
                 "--pyroscope-tenant must be printable ASCII"),
                (["--pyroscope-tenant", "t"], "need --pyroscope URL"),
                (["--pyroscope", "ftp://%s" % host], "http:// or https://"),
            ]
            two = os.path.join(d, "two-lines")
            with open(two, "w") as f:
                f.write(PASSWORD + "\nsecond line\n")
            bad.append((["--pyroscope", c.url, "--pyroscope-token-file", two],
                        "must hold one non-empty line"))
            for args, text in bad:
                r = subprocess.run([a.gpufl, "memprof", "--preload-lib",
                                    a.preload_lib] + args +
                                   ["--preload", "--", a.prog, a.go],
                                   capture_output=True, text=True,
                                   timeout=60, env=env_without_secrets())
                check(r.returncode == 2 and text in r.stderr and
                      r.stdout == "" and
                      all(s not in r.stderr for s in SECRETS),
                      "usage error %r: exit 2, says %r (%d %r)" %
                      (args[-1][:40], text, r.returncode, r.stderr.strip()))
            check(c.got == [], "usage errors: nothing was sent")
            # a bad GPUFL_PYROSCOPE_PASSWORD is not echoed either
            r = subprocess.run([a.gpufl, "memprof", "--pyroscope", c.url,
                                "--pyroscope-user", "alice", "--preload",
                                "--", a.prog, a.go], capture_output=True,
                               text=True, timeout=60,
                               env=env_without_secrets(
                                   {"GPUFL_PYROSCOPE_PASSWORD":
                                    PASSWORD + "\n"}))
            check(r.returncode == 2 and "GPUFL_PYROSCOPE_PASSWORD must be one "
                  "line" in r.stderr and PASSWORD not in r.stderr,
                  "bad environment password refused, not echoed")
        finally:
            c.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("%d failure(s)" % memprof_common.failures)
    return 1 if memprof_common.failures else 0


if __name__ == "__main__":
    sys.exit(main())
