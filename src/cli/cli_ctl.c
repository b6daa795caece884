/*
 * cli_ctl.c - `gpufl ctl PID|--all COMMAND [ARGS]`: talk to running
 * programs through libgpufl's control socket (docs/recorder.md#
 * control-socket): status, dump, trace on|off, engines.
 *
 * One connection per process: the request line out, the JSON line back,
 * printed with "pid" added.  --all finds the sockets in /proc/net/unix
 * ("@gpufl-ctl.<pid>") and asks each process of this user (every one for
 * root).  Exit 0 when every process answered "ok", 1 otherwise, 2 for a
 * usage error.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli_int.h"
#include "common/ctlproto.h"
#include "common/opt.h"

#define CTL_MAX_PIDS 4096 /* processes --all addresses */
#define CTL_WAIT_S 20     /* a dump waits up to 10 s inside the process */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpufl ctl PID|--all COMMAND [ARGS]\n\n"
            "Talks to running programs that use libgpufl, through their "
            "control socket\n(@gpufl-ctl.<pid>; the same user or root "
            "only).  Prints one JSON line per\nprocess.\n\n"
            "commands:\n"
            "  status                       mode, window, triggers, tracing, "
            "engines, files\n"
            "  dump [TEXT...]               ring mode: write the window now "
            "(the ctl trigger;\n"
            "                               TEXT goes into its trigger "
            "line)\n"
            "  trace on|off [--for DUR]     CUPTI activity tracing on or off "
            "(for DUR, then back)\n"
            "  engines sass|pcsamp|cupti|off [--for DUR]\n"
            "                               a profiling engine on (for DUR) "
            "or off\n\n"
            "DUR: 30s, 500ms, 2m (a bare number is ms).  Exit codes: 0 every "
            "process said ok,\n1 one did not (or none was found), 2 usage "
            "error.\n");
}

/* The request line from the command words: 0, or -1 (usage said). */
static int build(int argc, char **argv, char *out, size_t cap)
{
    const char *cmd = argv[0], *dur = NULL;
    size_t n = 0;
    uint64_t ms;
    char words[3][64];
    int nw = 0;
    if (!strcmp(cmd, "dump")) {
        n = (size_t)snprintf(out, cap, "dump");
        for (int i = 1; i < argc; i++) {
            for (const char *p = argv[i]; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
                    fprintf(stderr, "gpufl ctl: dump TEXT must be printable "
                                    "ASCII\n");
                    return -1;
                }
            n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, " %s",
                                  argv[i]);
        }
        if (n > 240) {
            fprintf(stderr, "gpufl ctl: dump TEXT is at most 230 bytes\n");
            return -1;
        }
        return 0;
    }
    if (strcmp(cmd, "status") && strcmp(cmd, "trace") &&
        strcmp(cmd, "engines")) {
        fprintf(stderr, "gpufl ctl: unknown command \"%s\"\n", cmd);
        return -1;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--for") && i + 1 < argc)
            dur = argv[++i];
        else if (!strncmp(argv[i], "--for=", 6))
            dur = argv[i] + 6;
        else if (nw < 3 && strlen(argv[i]) < sizeof words[0] &&
                 argv[i][0] != '-')
            snprintf(words[nw++], sizeof words[0], "%s", argv[i]);
        else {
            fprintf(stderr, "gpufl ctl: unexpected argument \"%s\"\n", argv[i]);
            return -1;
        }
    }
    if (dur && (strcmp(cmd, "trace") && strcmp(cmd, "engines"))) {
        fprintf(stderr, "gpufl ctl: --for goes with trace and engines\n");
        return -1;
    }
    if (dur && (opt_parse_dur(dur, OPT_MS, OPT_MS, &ms) || !ms)) {
        fprintf(stderr,
                "gpufl ctl: --for %s is not a duration (30s, "
                "500ms, 2m)\n",
                dur);
        return -1;
    }
    if ((!strcmp(cmd, "status") && nw != 0) ||
        (!strcmp(cmd, "trace") &&
         (nw != 1 || (strcmp(words[0], "on") && strcmp(words[0], "off")))) ||
        (!strcmp(cmd, "engines") && nw != 1)) {
        fprintf(stderr, "gpufl ctl: %s: wrong arguments (see --help)\n", cmd);
        return -1;
    }
    n = (size_t)snprintf(out, cap, "%s", cmd);
    if (nw)
        n += (size_t)snprintf(out + n, cap - n, " %s", words[0]);
    if (dur)
        snprintf(out + n, cap - n, " for=%llu", (unsigned long long)ms);
    return 0;
}

/* Print {"pid":N,...} from the process's reply or our own error. */
static int print_reply(long pid, const char *reply, const char *err)
{
    if (err) {
        printf("{\"pid\":%ld,\"ok\":false,\"error\":\"%s\"}\n", pid, err);
        return 1;
    }
    printf("{\"pid\":%ld,%s", pid, reply + 1); /* reply ends in \n */
    return strncmp(reply, "{\"ok\":true", 10) != 0;
}

static int ask(long pid, const char *req)
{
    struct sockaddr_un a;
    socklen_t len = ctl_addr(&a, (uint32_t)pid);
    struct timeval tv = { CTL_WAIT_S, 0 };
    static char buf[CTL_RESP_MAX + 1];
    char err[160];
    size_t got = 0, rl = strlen(req);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 1;
    if (fd < 0)
        return print_reply(pid, NULL, "cannot make a socket");
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, len) != 0) {
        snprintf(err, sizeof err,
                 "no control socket for pid %ld (not a gpufl program, "
                 "GPUFL_CTL=false, or its session ended): %s",
                 pid, strerror(errno));
        close(fd);
        return print_reply(pid, NULL, err);
    }
    if (send(fd, req, rl, MSG_NOSIGNAL) != (ssize_t)rl ||
        send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
        close(fd);
        return print_reply(pid, NULL, "the request could not be sent");
    }
    for (;;) {
        ssize_t n = recv(fd, buf + got, CTL_RESP_MAX - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(buf, '\n', got) || got == CTL_RESP_MAX)
            break;
    }
    close(fd);
    buf[got] = 0;
    if (!got || buf[0] != '{' || !strchr(buf, '\n'))
        return print_reply(pid, NULL,
                           got ? "the reply was not one JSON line"
                               : "no reply (timed out, or the process "
                                 "closed the connection)");
    strchr(buf, '\n')[1] = 0;
    rc = print_reply(pid, buf, NULL);
    return rc;
}

/* The processes with a control socket, of our uid (all for root). */
static size_t find_all(long *pids, size_t max)
{
    FILE *f = fopen("/proc/net/unix", "re");
    char line[512];
    size_t n = 0;
    uid_t me = geteuid();
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f) && n < max) {
        char *at = strstr(line, " @" CTL_NAME_PREFIX);
        char path[64], st[256];
        long pid;
        int dup = 0;
        FILE *sf;
        unsigned long uid = (unsigned long)-1;
        if (!at)
            continue;
        pid = strtol(at + 2 + sizeof CTL_NAME_PREFIX - 1, NULL, 10);
        if (pid <= 0 || pid == (long)getpid())
            continue;
        for (size_t i = 0; i < n; i++)
            dup |= pids[i] == pid;
        if (dup)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/status", pid);
        sf = fopen(path, "re");
        if (!sf)
            continue;
        while (fgets(st, sizeof st, sf))
            if (!strncmp(st, "Uid:", 4)) {
                uid = strtoul(st + 4, NULL, 10);
                break;
            }
        fclose(sf);
        if (me == 0 || uid == (unsigned long)me)
            pids[n++] = pid;
    }
    fclose(f);
    return n;
}

int cli_ctl_main(int argc, char **argv)
{
    char req[CTL_REQ_MAX];
    static long pids[CTL_MAX_PIDS];
    size_t n = 0;
    int bad = 0;
    char *end;
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 3) {
        usage(stderr);
        return 2;
    }
    if (build(argc - 2, argv + 2, req, sizeof req) < 0)
        return 2;
    if (!strcmp(argv[1], "--all")) {
        n = find_all(pids, CTL_MAX_PIDS);
        if (!n) {
            fprintf(stderr,
                    "gpufl ctl: no process of uid %ld has a gpufl "
                    "control socket\n",
                    (long)geteuid());
            return 1;
        }
    } else {
        errno = 0;
        pids[0] = strtol(argv[1], &end, 10);
        if (errno || *end || pids[0] <= 0) {
            fprintf(stderr,
                    "gpufl ctl: \"%s\" is not a process id (or "
                    "--all)\n",
                    argv[1]);
            return 2;
        }
        n = 1;
    }
    for (size_t i = 0; i < n; i++)
        bad |= ask(pids[i], req);
    fflush(stdout);
    return bad ? 1 : 0;
}
