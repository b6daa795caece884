/*
 * cli_ctl.c - `gpufl ctl PID|--all COMMAND [ARGS]`: talk to running
 * programs through libgpufl's control socket (docs/recorder.md#
 * control-socket): status, dump, trace on|off, engines.
 *
 * One connection per process: the request line out, the JSON line back,
 * printed with "pid" added.  --all finds the sockets in /proc/net/unix
 * ("@gpufl-ctl.<pid>") and asks each process of this user (every one for
 * root).  Exit 0 when every process answered "ok", 1 otherwise, 2 for a
 * usage error (nothing is sent then).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_int.h"
#include "common/ctlc.h"
#include "common/jw.h"
#include "common/log.h"
#include "common/opt.h"

#define CTL_MAX_PIDS 4096 /* processes --all addresses */
/* dump TEXT: the trigger line's detail is at most 255 bytes */
#define CTL_TEXT_MAX 230
#define CTL_FOR_MAX_MS 86400000ull /* the process refuses more than a day */

typedef struct ctl_opts {
    int all;
    uint64_t for_ms; /* 0: not given */
    int log_level, log_format;
} ctl_opts;

#define T ctl_opts
static const opt_def ctl_rows[] = {
    { .name = "all",
      .type = OPT_BOOL,
      OPT_F_SINT(T, all),
      .flags = OPT_CLI_ONLY,
      .help = "Instead of PID: every process of this user (every process, "
              "for root) that has a gpufl control socket, found in "
              "/proc/net/unix." },
    { .name = "for",
      .type = OPT_DUR,
      .unit = OPT_MS,
      OPT_F_UINT(T, for_ms),
      .min = 1,
      .max = CTL_FOR_MAX_MS,
      .flags = OPT_CLI_ONLY,
      .arg = "DUR",
      .help = "With `trace` and `engines`: back to how it was after DUR "
              "(`30s`, `500ms`, `2m`; a bare number is milliseconds)." },
    GLOG_OPT_ROWS(T, log_level, log_format),
};
#undef T

const opt_prog cli_ctl_prog = {
    .name = "gpufl ctl",
    .env_prefix = "GPUFL_CTL_",
    .opts = ctl_rows,
    .n = sizeof ctl_rows / sizeof ctl_rows[0],
    .size = sizeof(ctl_opts),
    .usage = "usage: gpufl ctl PID|--all status\n"
             "       gpufl ctl PID|--all dump [TEXT...]\n"
             "       gpufl ctl PID|--all trace on|off [--for DUR]\n"
             "       gpufl ctl PID|--all engines sass|pcsamp|cupti|off "
             "[--for DUR]\n\n"
             "Talks to running programs that use libgpufl, through their "
             "control socket\n(@gpufl-ctl.<pid>; the same user or root "
             "only), and prints each one's answer\nas one JSON line with "
             "\"pid\" added (docs/recorder.md).\n\n"
             "  status     mode, window, triggers, tracing, engines, files\n"
             "  dump       ring mode: write the window now (the ctl trigger; "
             "TEXT, printable\n             ASCII, goes into its trigger "
             "line; after -- when it starts with -)\n"
             "  trace      CUPTI activity tracing on or off\n"
             "  engines    a profiling engine on, or off\n",
    .tail = "Exit codes: 0 every process said ok, 1 one did not (or none was "
            "found), 2 usage\nerror.\n",
    .flags = OPT_P_ARGS | OPT_P_DASHDASH,
};

/* The request line from the command words: 0, or 2 (usage, said). */
static int build(const ctl_opts *o, char **w, size_t nw, char **rest, int nrest,
                 char *out, size_t cap)
{
    const char *cmd = w[0];
    size_t n;
    int is_trace = !strcmp(cmd, "trace"), is_eng = !strcmp(cmd, "engines");

    if (!strcmp(cmd, "dump")) {
        n = (size_t)snprintf(out, cap, "dump");
        for (size_t i = 1; i < nw + (size_t)nrest; i++) {
            const char *a = i < nw ? w[i] : rest[i - nw];
            for (const char *p = a; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
                    glog_error("ctl", "dump TEXT must be printable ASCII");
                    return 2;
                }
            n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, " %s", a);
        }
        if (n > CTL_TEXT_MAX + 5) {
            glog_error("ctl", "dump TEXT is at most %d bytes", CTL_TEXT_MAX);
            return 2;
        }
        if (o->for_ms) {
            glog_error("ctl", "--for goes with trace and engines");
            return 2;
        }
        return 0;
    }
    if (strcmp(cmd, "status") && !is_trace && !is_eng) {
        glog_error("ctl",
                   "unknown command \"%.100s\" (status, dump, trace, "
                   "engines)",
                   cmd);
        return 2;
    }
    if (nrest) {
        glog_error("ctl", "%s: nothing goes after --", cmd);
        return 2;
    }
    if (o->for_ms && !is_trace && !is_eng) {
        glog_error("ctl", "--for goes with trace and engines");
        return 2;
    }
    if ((!is_trace && !is_eng && nw != 1) ||
        (is_trace &&
         (nw != 2 || (strcmp(w[1], "on") && strcmp(w[1], "off")))) ||
        (is_eng && (nw != 2 || strlen(w[1]) > 32))) {
        glog_error("ctl", "%s: wrong arguments (see gpufl ctl --help)", cmd);
        return 2;
    }
    n = (size_t)snprintf(out, cap, "%s", cmd);
    if (nw == 2)
        n += (size_t)snprintf(out + n, cap - n, " %s", w[1]);
    if (o->for_ms)
        snprintf(out + n, cap - n, " for=%llu", (unsigned long long)o->for_ms);
    return 0;
}

/* Print {"pid":N,...} from the process's reply or our own error. */
static int print_reply(long pid, const char *reply, const char *err)
{
    char line[512];
    jw j;
    if (err) {
        jw_init(&j, line, sizeof line - 1);
        jw_obj_begin(&j);
        jw_kv_u64(&j, "pid", (uint64_t)pid);
        jw_key(&j, "ok");
        jw_bool(&j, 0);
        jw_key(&j, "error");
        jw_strn(&j, err, strlen(err), 300);
        jw_obj_end(&j);
        if (j.err) /* cannot happen: 300 bytes of text, escaped, fit */
            return 1;
        line[j.len] = 0;
        printf("%s\n", line);
        return 1;
    }
    /* the reply is one object ending in "}\n": "pid" goes in first */
    printf("{\"pid\":%ld%s%s", pid, reply[1] == '}' ? "" : ",", reply + 1);
    return strncmp(reply, "{\"ok\":true", 10) != 0;
}

static int ask(long pid, const char *req)
{
    static char buf[CTL_RESP_MAX + 1];
    char err[160];
    if (ctlc_ask(pid, req, CTLC_WAIT_S, buf, sizeof buf, err, sizeof err))
        return print_reply(pid, NULL, err);
    return print_reply(pid, buf, NULL);
}

int cli_ctl_main(int argc, char **argv)
{
    static opt_ctx c; /* large: its origin table */
    static long pids[CTL_MAX_PIDS];
    char req[CTL_REQ_MAX];
    ctl_opts o;
    size_t n = 0, first;
    int bad = 0, rc;
    char *end;

    glog_setup("gpufl ctl", GLOG_INFO, GLOG_TEXT);
    rc = opt_cli(&c, &cli_ctl_prog, &o, NULL, argc, argv);
    if (rc)
        goto out;
    glog_setup("gpufl ctl", o.log_level, o.log_format);
    /* PID, then the command's words; with --all, no PID */
    first = o.all ? 0 : 1;
    if (c.nargs < first + 1) {
        glog_error("ctl", "%s (see gpufl ctl --help)",
                   o.all ? "a command after --all, please"
                         : "PID or --all, then a command, please");
        rc = 2;
        goto out;
    }
    rc = build(&o, c.args + first, c.nargs - first, c.rest, c.nrest, req,
               sizeof req);
    if (rc)
        goto out;
    if (o.all) {
        n = ctlc_find_all(pids, CTL_MAX_PIDS);
        if (!n) {
            glog_error("ctl",
                       "no process of uid %ld has a gpufl control socket",
                       (long)geteuid());
            rc = 1;
            goto out;
        }
    } else {
        errno = 0;
        pids[0] = strtol(c.args[0], &end, 10);
        if (errno || *end || pids[0] <= 0 || pids[0] > 4194304) {
            glog_error("ctl", "\"%.100s\" is not a process id (or --all)",
                       c.args[0]);
            rc = 2;
            goto out;
        }
        n = 1;
    }
    for (size_t i = 0; i < n; i++)
        bad |= ask(pids[i], req);
    fflush(stdout);
    rc = bad ? 1 : 0;
out:
    opt_release(&cli_ctl_prog, &o);
    return rc < 0 ? 0 : rc;
}
