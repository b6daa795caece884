#!/usr/bin/env python3
"""test_opt_programs.py - every program reads its options the same way.

gpufl-agent, gpufl-server, gpufl idle, gpufl memprof, gpufl demo and
gpufl ctl read their options with one engine (src/common/opt.h).  For
each, the real binary is run with a config file, a GPUFL_<PROGRAM>_*
variable and flags, and --dump-config must show:
  - a size in bytes and a duration with its unit, written in the shared
    syntax (16MiB, 500ms, 2m), with the layer each came from;
  - flags over the environment over the file over the defaults;
  - secrets as (set), never their value;
and a typo in a flag or a variable is a usage error (2) with a hint.
"""
import os
import subprocess
import sys
import tempfile

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
fails = 0


def check(cond, what):
    global fails
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        fails += 1


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    env.update(extra or {})
    return env


# (argv, prefix, file line, env (name, value), flags, lines the dump must
# hold, secret flag)
PROGRAMS = [
    (["gpufl-agent"], "GPUFL_AGENT_", "batch-lines = 5\ntopic-prefix = ff\n",
     ("GPUFL_AGENT_BATCH_LINES", "7"),
     ["--batch-bytes=2MiB", "--linger-ms=1.5s", "--batch-lines", "9"],
     ["batch-bytes = 2097152  # flag", "linger-ms = 1500ms  # flag",
      "batch-lines = 9  # flag", "topic-prefix = ff  # file ",
      "compress = zstd  # default"], "--token=S3CRET-VALUE"),
    (["gpufl-server"], "GPUFL_SERVER_", "threads = 5\nkafka-group = ff\n",
     ("GPUFL_SERVER_READERS", "3"),
     ["--max-body=16MiB", "--stale-after=90s", "--threads=9"],
     ["max-body = 16777216  # flag", "stale-after = 90s  # flag",
      "threads = 9  # flag", "readers = 3  # env GPUFL_SERVER_READERS",
      "kafka-group = ff  # file "], "--admin-token=S3CRET-VALUE"),
    (["gpufl", "idle", "watch"], "GPUFL_IDLE_",
     "samples = 4\nhook-url = http://ff/\n", ("GPUFL_IDLE_SAMPLES", "6"),
     ["--empty-mem=64M", "--window", "2m", "--interval=250ms"],
     ["empty-mem = 67108864  # flag", "window = 2m  # flag",
      "interval = 250ms  # flag", "samples = 6  # env GPUFL_IDLE_SAMPLES",
      "hook-url = http://ff/  # file "], None),
    (["gpufl", "memprof", "--all"], "GPUFL_MEMPROF_", "top = 5\nhost = ff\n",
     ("GPUFL_MEMPROF_TOP", "6"), ["--interval=500ms", "--top=7"],
     ["interval = 500ms  # flag", "top = 7  # flag", "host = ff  # file ",
      "view = alloc  # default"], "--token=S3CRET-VALUE"),
    (["gpufl", "demo"], "GPUFL_DEMO_", "steps = 5\nengines = sim\n",
     ("GPUFL_DEMO_STEPS", "6"), ["--pause=1m", "--no-idle"],
     ["pause = 1m  # flag", "idle = false  # flag",
      "steps = 6  # env GPUFL_DEMO_STEPS", "engines = sim  # file "],
     "--token=S3CRET-VALUE"),
    (["gpufl", "ctl"], "GPUFL_CTL_", "log-level = error\nlog-format = text\n",
     ("GPUFL_CTL_LOG_LEVEL", "warn"), ["--log-format=json"],
     ["log-format = json  # flag",
      "log-level = warn  # env GPUFL_CTL_LOG_LEVEL"], None),
]


def run(argv, env=None):
    exe = os.path.join(BIN, argv[0])
    return subprocess.run([exe] + argv[1:], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60,
                          env=clean_env(env))


def main():
    have = run(["gpufl", "--help"]).stdout
    tmp = tempfile.mkdtemp(dir=os.environ.get("GPUFL_TEST_TMP"))
    for argv, prefix, text, (var, val), flags, want, secret in PROGRAMS:
        name = " ".join(argv[:2]) if argv[0] == "gpufl" else argv[0]
        if argv[0] == "gpufl" and ("  %s " % argv[1]) not in have:
            print("skip %s: not in this build" % name)
            continue
        conf = os.path.join(tmp, prefix + "conf")
        with open(conf, "w") as f:
            f.write(text)
        args = argv + ["--config", conf] + flags + ["--dump-config"]
        if secret:
            args.append(secret)
        r = run(args, {var: val})
        check(r.returncode == 0, "%s --dump-config exits 0 (%d %s)" %
              (name, r.returncode, r.stderr.strip()))
        for line in want:
            check(line in r.stdout, "%s dump has %r" % (name, line))
        check("S3CRET" not in r.stdout + r.stderr,
              "%s: the secret is not shown" % name)
        if secret:
            check("%s = (set)" % secret[2:].split("=")[0] in r.stdout,
                  "%s: the secret shows as (set)" % name)
        # the dump loads back as a config file
        again = os.path.join(tmp, prefix + "dump")
        with open(again, "w") as f:
            f.write(r.stdout)
        r2 = run(argv + ["--config", again, "--dump-config"])
        check(r2.returncode == 0 and all(
            l.split("  #")[0] in r2.stdout for l in want),
            "%s: the dump loads back (%s)" % (name, r2.stderr.strip()))
        r = run(argv + ["--dump-config"], {prefix + "BOGUS_NAME": "1"})
        check(r.returncode == 2 and "unknown variable '%sBOGUS_NAME'" %
              prefix in r.stderr, "%s: an unknown %s* variable is refused "
              "(%d %s)" % (name, prefix, r.returncode, r.stderr.strip()))
        typo = flags[0].split("=")[0][:-1]
        r = run(argv + [typo + "x=1"])
        check(r.returncode == 2 and "did you mean '%s'" %
              flags[0].split("=")[0] in r.stderr,
              "%s: %sx is refused with a hint (%s)" %
              (name, typo, r.stderr.strip()))
        r = run(argv + ["--help"])
        check(r.returncode == 0 and var in r.stdout and prefix + "CONFIG"
              in r.stdout, "%s --help names %s" % (name, var))
    print("%d failures" % fails)
    sys.exit(1 if fails else 0)


main()
