"""test_deploy.py - what can be checked of deploy/ without a container
engine or a cluster (none runs here; docs/deploy.md says what was not run):

- every YAML file parses (PyYAML from Debian's python3-yaml, run with
  /usr/bin/python3: the test's own interpreter may lack it);
- every gpufl program a file starts exists in the build and accepts every
  flag given to it (checked against the program's own --help), and every
  GPUFL_* variable set is one the program reads (its --help lists them);
- compose: ${VARS} are in compose.env.example, depends_on names services;
- Kubernetes: ConfigMaps referenced are defined, Secrets referenced are
  the ones the file tells how to create, probes hit /healthz or /readyz,
  nothing runs privileged and added capabilities are the documented ones;
- systemd: ExecStart binaries and flags, EnvironmentFile examples;
- Dockerfile: COPY sources exist, runtime packages exist in Debian and
  provide every shared library the built programs need (ldd + dpkg -S).
Environment: GPUFL_BIN_DIR.
"""
import glob
import json
import os
import re
import shlex
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")
BIN = os.environ.get("GPUFL_BIN_DIR", os.path.join(ROOT, "build", "bin"))
# where the image / units install things -> where the build has them
INSTALLED = {"/usr/local/bin/": BIN + "/",
             "/usr/local/libexec/gpufl/": BIN + "/"}
# capabilities a DaemonSet may add, and why (docs/deploy.md)
ALLOWED_CAPS = {
    "gpufl-memprof": {"BPF", "PERFMON", "SYS_RESOURCE", "SYS_PTRACE"},
}

_help_cache = {}


def load_yaml(path):
    code = ("import json,sys,yaml;"
            "print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))")
    r = subprocess.run(["/usr/bin/python3", "-c", code, path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode:
        raise AssertionError("%s does not parse as YAML:\n%s" % (path, r.stderr))
    return [d for d in json.loads(r.stdout) if d is not None]


def local_path(prog):
    for inst, here in INSTALLED.items():
        if prog.startswith(inst):
            return here + prog[len(inst):]
    return os.path.join(BIN, prog) if "/" not in prog else prog


def help_text(argv0, sub=None):
    key = (argv0, sub)
    if key not in _help_cache:
        path = local_path(argv0)
        if not os.access(path, os.X_OK):
            raise AssertionError("%s (%s) is not in the build" % (argv0, path))
        cmd = [path] + ([sub] if sub else []) + ["--help"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        _help_cache[key] = r.stdout
    return _help_cache[key]


def check_argv(tc, argv, where):
    """argv[0] a gpufl program; every --flag must be in its --help."""
    prog = os.path.basename(argv[0])
    sub = None
    rest = argv[1:]
    if prog == "gpufl" and rest and not rest[0].startswith("-"):
        sub, rest = rest[0], rest[1:]
    text = help_text(argv[0], sub)
    for a in rest:
        if a.startswith("--"):
            flag = a.split("=", 1)[0]
            tc.assertRegex(text, r"(?m)(^|[\s\[,])%s(\b|=|\s)" % re.escape(flag),
                           "%s: %s %s has no flag %s" % (where, prog, sub or "",
                                                         flag))
    return text


def env_prefix(prog):
    return {"gpufl-server": "GPUFL_SERVER_", "gpufl-agent": "GPUFL_AGENT_"}.get(
        os.path.basename(prog))


def check_env(tc, prog, names, where, sub=None):
    if os.path.basename(prog) == "gpufl" and sub:
        # gpufl SUB reads GPUFL_SUB_<OPTION> for each --option (docs/idle.md)
        text = help_text(prog, sub)
        pre = "GPUFL_%s_" % sub.upper()
        for n in names:
            tc.assertTrue(n.startswith(pre), "%s: %s is not %s*" % (where, n,
                                                                  pre))
            flag = "--" + n[len(pre):].lower().replace("_", "-")
            tc.assertRegex(text, r"(?m)^\s*%s\b" % re.escape(flag),
                           "%s: %s names no option of gpufl %s" % (where, n,
                                                                   sub))
        return
    text = help_text(prog)
    pre = env_prefix(prog)
    for n in names:
        if pre and n.startswith("GPUFL_"):
            tc.assertTrue(n.startswith(pre), "%s: %s is not a %s* variable"
                          % (where, n, pre))
            tc.assertIn(n, text, "%s: %s does not read %s" % (where, prog, n))


class Compose(unittest.TestCase):
    def setUp(self):
        self.path = os.path.join(DEPLOY, "docker-compose.yml")
        (self.doc,) = load_yaml(self.path)
        with open(os.path.join(DEPLOY, "compose.env.example")) as f:
            self.example = {l.split("=", 1)[0] for l in f
                            if "=" in l and not l.startswith("#")}

    def test_variables_are_in_the_example_env(self):
        with open(self.path) as f:
            used = set(re.findall(r"\$\{(\w+)", f.read()))
        self.assertTrue(used)
        self.assertEqual(used - self.example, set())

    def test_services(self):
        svcs = self.doc["services"]
        self.assertIn("server", svcs)
        self.assertIn("agent", svcs)
        vols = set(self.doc.get("volumes", {}))
        for name, s in svcs.items():
            deps = s.get("depends_on", [])
            for d in (deps if isinstance(deps, list) else deps.keys()):
                self.assertIn(d, svcs, "%s depends on unknown %s" % (name, d))
            for v in s.get("volumes", []):
                src = v.split(":")[0]
                if not src.startswith((".", "/")):
                    self.assertIn(src, vols, "%s: volume %s" % (name, src))
            cmd = s.get("command")
            if s.get("image") != "gpufl:latest" or not cmd:
                continue
            cmd = cmd if isinstance(cmd, list) else shlex.split(cmd)
            if cmd[0] == "/bin/sh":   # a loop around a program: its argv
                script = " ".join(cmd[2:])
                m = re.search(r"\bdo (.+?);", script)
                self.assertTrue(m, "compose %s: no program in %r" % (name,
                                                                     script))
                argv = shlex.split(m.group(1))
                check_argv(self, argv, "compose " + name)
                continue
            check_argv(self, cmd, "compose " + name)
            check_env(self, cmd[0], s.get("environment", {}), "compose " + name)


class Kubernetes(unittest.TestCase):
    def setUp(self):
        self.docs = []
        self.text = ""
        for p in sorted(glob.glob(os.path.join(DEPLOY, "k8s", "*.yaml"))):
            for d in load_yaml(p):
                self.docs.append((os.path.basename(p), d))
            with open(p) as f:
                self.text += f.read()
        self.assertGreaterEqual(len(self.docs), 6)

    def objects(self, kind):
        return [d for _, d in self.docs if d["kind"] == kind]

    def test_every_object_is_well_formed(self):
        for f, d in self.docs:
            for k in ("apiVersion", "kind", "metadata"):
                self.assertIn(k, d, f)
            if d["kind"] != "Namespace":
                self.assertEqual(d["metadata"].get("namespace"), "gpufl", f)

    def workloads(self):
        for d in self.objects("Deployment") + self.objects("DaemonSet"):
            sel = d["spec"]["selector"]["matchLabels"]
            tl = d["spec"]["template"]["metadata"]["labels"]
            self.assertEqual({k: tl.get(k) for k in sel}, sel,
                             d["metadata"]["name"])
            yield d, d["spec"]["template"]["spec"]

    def test_containers_programs_flags_env_and_references(self):
        cms = {d["metadata"]["name"]: d for d in self.objects("ConfigMap")}
        n = 0
        for d, pod in self.workloads():
            name = d["metadata"]["name"]
            for c in pod["containers"]:
                argv = c["command"] + c.get("args", [])
                check_argv(self, argv, name)
                env = [e["name"] for e in c.get("env", [])]
                for ef in c.get("envFrom", []):
                    ref = ef["configMapRef"]["name"]
                    self.assertIn(ref, cms, "%s: ConfigMap %s" % (name, ref))
                    env += list(cms[ref]["data"])
                check_env(self, c["command"][0], env, name)
                for e in c.get("env", []):
                    sk = e.get("valueFrom", {}).get("secretKeyRef")
                    if sk:   # the file says how to create it
                        self.assertRegex(self.text, r"create secret generic %s"
                                         % re.escape(sk["name"]))
                        self.assertIn("%s=" % sk["key"], self.text)
                for probe in ("readinessProbe", "livenessProbe"):
                    if probe in c:
                        self.assertIn(c[probe]["httpGet"]["path"],
                                      ("/healthz", "/readyz", "/metrics"))
                n += 1
        self.assertGreaterEqual(n, 2)

    def test_least_privilege(self):
        for d, pod in self.workloads():
            name = d["metadata"]["name"]
            for c in pod["containers"]:
                sc = c.get("securityContext", {})
                self.assertFalse(sc.get("privileged", False), name)
                self.assertFalse(sc.get("allowPrivilegeEscalation", True),
                                 name + ": allowPrivilegeEscalation unset")
                self.assertIn("ALL", sc.get("capabilities", {}).get("drop", []),
                              name)
                added = set(sc.get("capabilities", {}).get("add", []))
                self.assertLessEqual(added, ALLOWED_CAPS.get(name, set()),
                                     name + ": capabilities beyond the "
                                     "documented ones")

    def test_server_service_matches_deployment(self):
        (svc,) = [s for s in self.objects("Service")
                  if s["metadata"]["name"] == "gpufl-server"]
        (dep,) = [x for x in self.objects("Deployment")
                  if x["metadata"]["name"] == "gpufl-server"]
        labels = dep["spec"]["template"]["metadata"]["labels"]
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(labels.get(k), v)
        ports = {p["name"] for c in dep["spec"]["template"]["spec"]["containers"]
                 for p in c["ports"]}
        for p in svc["spec"]["ports"]:
            self.assertIn(p["targetPort"], ports)


class Systemd(unittest.TestCase):
    def test_units(self):
        units = sorted(glob.glob(os.path.join(DEPLOY, "systemd", "*.service")))
        self.assertGreaterEqual(len(units), 2)
        for u in units:
            with open(u) as f:
                text = f.read()
            for sec in ("[Unit]", "[Service]", "[Install]"):
                self.assertIn(sec, text, u)
            (start,) = re.findall(r"(?m)^ExecStart=(.+)$", text)
            argv = shlex.split(start)
            check_argv(self, argv, os.path.basename(u))
            ex = os.path.join(DEPLOY, "systemd", os.path.basename(u)
                              .replace("gpufl-", "").replace(".service",
                                                             ".env.example"))
            if "EnvironmentFile=" in text and os.path.exists(ex):
                with open(ex) as f:
                    names = [l.split("=", 1)[0].strip() for l in f
                             if "=" in l and not l.lstrip().startswith("#")]
                check_env(self, argv[0], names, ex,
                          argv[1] if os.path.basename(argv[0]) == "gpufl"
                          else None)


class Dockerfile(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            self.text = f.read()

    def test_copy_sources_exist(self):
        for line in re.findall(r"(?m)^COPY (?!--from)(.+)$", self.text):
            for src in line.split()[:-1]:
                p = os.path.join(ROOT, src)
                if src.startswith("web/") and not os.path.isdir(
                        os.path.join(ROOT, "web")):
                    continue
                self.assertTrue(os.path.exists(p) or src == ".", src)

    def test_runtime_packages_cover_the_programs(self):
        m = re.search(r"FROM debian:12-slim\s+RUN apt-get update && apt-get "
                      r"install -y --no-install-recommends(.+?)&&", self.text,
                      re.S)
        self.assertTrue(m)
        pkgs = set(m.group(1).replace("\\", " ").split())
        for p in pkgs:
            r = subprocess.run(["apt-cache", "show", p], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 0, "no Debian package %s" % p)
        base = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1"}
        for prog in ("gpufl-server", "gpufl-agent", "gpufl"):
            out = subprocess.run(["ldd", os.path.join(BIN, prog)],
                                 stdout=subprocess.PIPE, text=True).stdout
            for lib in re.findall(r"=> (/\S+)", out):
                if "/build" in lib or lib.startswith(ROOT):
                    continue   # gpufl's own libraries
                r = subprocess.run(["dpkg", "-S", lib], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
                if r.returncode:
                    real = os.path.realpath(lib)
                    r = subprocess.run(["dpkg", "-S", real],
                                       stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True)
                self.assertEqual(r.returncode, 0, "%s: %s is from no package"
                                 % (prog, lib))
                pkg = r.stdout.split(":")[0]
                # a direct dependency must be named; indirect ones come with
                # it (apt resolves them), so only check libraries gpufl links
                if self.direct(prog, lib):
                    self.assertTrue(pkg in pkgs or pkg in base,
                                    "%s needs %s (%s), not in the runtime "
                                    "image" % (prog, lib, pkg))

    @staticmethod
    def direct(prog, lib):
        out = subprocess.run(["readelf", "-d", os.path.join(BIN, prog)],
                             stdout=subprocess.PIPE, text=True).stdout
        needed = re.findall(r"\(NEEDED\).*\[(.+)\]", out)
        return os.path.basename(lib) in needed


class Docs(unittest.TestCase):
    def test_every_deploy_file_is_documented(self):
        with open(os.path.join(ROOT, "docs", "deploy.md")) as f:
            doc = f.read()
        for p in glob.glob(os.path.join(DEPLOY, "**", "*"), recursive=True):
            if os.path.isfile(p):
                rel = os.path.relpath(p, ROOT)
                self.assertIn(rel, doc, "docs/deploy.md does not mention "
                              + rel)


if __name__ == "__main__":
    unittest.main()
