/*
 * bench_scale.c - gpufl-server at scale: one session of KERNELS kernels
 * (the "100M kernels in one server, a week of one busy GPU")
 * streamed over HTTP into a gpufl-server process started as a user would,
 * then the kernel page, sorted pages, aggregates and timeline queries of
 * bench_server on it.  Run it at 1M and at 100M and compare: the ingest
 * rate should hold from the first tenth to the last, and the queries' p99
 * stay within twice their 1M figures.
 *
 *   bench_scale [--kernel-store=rows|blocks] [--server PATH]
 *               [--queries-only] [--inline-gen] KERNELS [NAMES [DIR [PGURL]]]
 *   (defaults: blocks, the gpufl-server beside this program, 200 names,
 *    /tmp)
 *
 * The lines are bench_server's (bench_common.c), made batch by batch on a
 * thread of their own, at most two batches ahead of the sending, so memory
 * stays flat at any KERNELS and the rate is the server's, not the
 * generator's (--inline-gen: made between the requests, as before).  Per tenth it
 * prints the kernels sent, that tenth's and the whole run's events/s, the
 * server's CPU seconds per 1M and resident memory, and the data
 * directory's bytes (SQLite; PostgreSQL's are in its own directory).
 * PGURL must name an empty database (the SQLite file in DIR is made
 * anew): one that already holds the session answers every kernel a
 * duplicate, and the bench then stops rather than time the replays.
 * After the ingest the queries run twice: at once, and once the compactor
 * (every second here) has merged the small blocks and gone quiet.  Prints
 * figures; not a test.
 */
#include "bench_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "bench-admin-token-0123456789abcdef"
#define SID "5ca1e5ca-0000-4000-8000-00000000be01"
#define RESP_MAX (16u << 20)
/* how long the compactor must stay silent to count as done, and the
 * longest wait for it */
#define QUIET_S 8
#define COMPACT_WAIT_S 1800

typedef struct server {
    pid_t pid;
    char log[1024];
    uint16_t port;
} server;

/* The whole of a small file (the server's log) into buf; its length. */
static size_t slurp(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t n = 0;
    ssize_t r;

    if (fd < 0)
        return 0;
    while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = 0;
    return n;
}

/* The value of the /metrics sample that starts with name (its labels
 * included), or -1. */
static double metric(const char *m, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = m; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
        if (!strncmp(p, name, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

/* The number after key (its quotes and colon included) in an ingest
 * answer, 0 if absent. */
static unsigned long long answer_u64(const char *resp, const char *key)
{
    const char *p = strstr(resp, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* The ingest's time in the server from one /metrics scrape, s: the
 * phases (gpufl_ingest_seconds_total: parse, wait, write, commit), then
 * the ingest route's request seconds and count.  0, or -1. */
#define PH_N 6
static int ingest_phases(int fd, char *resp, size_t cap, double v[PH_N])
{
    static const char *const name[PH_N] = {
        "gpufl_ingest_seconds_total{phase=\"parse\"}",
        "gpufl_ingest_seconds_total{phase=\"wait\"}",
        "gpufl_ingest_seconds_total{phase=\"write\"}",
        "gpufl_ingest_seconds_total{phase=\"commit\"}",
        "gpufl_http_request_seconds_sum{route=\"ingest\"}",
        "gpufl_http_request_seconds_count{route=\"ingest\"}"
    };

    if (http(fd, "GET", "/metrics", TOKEN, NULL, 0, resp, cap) != 200)
        return -1;
    for (int i = 0; i < PH_N; i++)
        if ((v[i] = metric(resp, name[i])) < 0)
            return -1;
    return 0;
}

/* Where the timed requests spent their time (b: the phases before them,
 * a: after; wall: their seconds at the client), ms per request. */
static void ingest_phases_print(const double *b, const double *a, double wall)
{
    double d[PH_N], n;

    for (int i = 0; i < PH_N; i++)
        d[i] = (a[i] - b[i]) * 1e3;
    n = d[5] / 1e3;
    if (n <= 0)
        return;
    printf("  per ingest request (%.0f): %.2f ms at the client, %.2f in the"
           " server = parse %.2f + writer's lock wait %.2f + write %.2f +"
           " commit %.2f + the rest %.2f (body in, answer out)\n",
           n, wall * 1e3 / n, d[4] / n, d[0] / n, d[1] / n, d[2] / n, d[3] / n,
           (d[4] - d[0] - d[1] - d[2] - d[3]) / n);
}

/* Removes the regular files of dir (this bench's own data directory). */
static void clear_dir(const char *d)
{
    char path[2048];
    DIR *h = opendir(d);
    struct dirent *e;
    struct stat st;

    while (h && (e = readdir(h)))
        if (snprintf(path, sizeof(path), "%s/%s", d, e->d_name) <
                (int)sizeof(path) &&
            lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            unlink(path);
    if (h)
        closedir(h);
}

static int server_start(server *sv, const char *bin, const char *dir,
                        const char *kstore, const char *pg, int keep)
{
    char ddir[1024], port[16], buf[8192], *p;
    int fd;

    snprintf(ddir, sizeof(ddir), "%s/bench_scale", dir);
    snprintf(sv->log, sizeof(sv->log), "%s/bench_scale.server.log", dir);
    if (mkdir(ddir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_scale: %s: %s\n", ddir, strerror(errno));
        return -1;
    }
    if (!keep)
        clear_dir(ddir); /* a new database: the last run's is gone */
    fd = open(sv->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    sv->pid = fork();
    if (sv->pid == 0) {
        char ks[64];
        char *av[16];
        int n = 0;
        snprintf(ks, sizeof(ks), "--kernel-store=%s", kstore);
        av[n++] = (char *)bin;
        av[n++] = "--listen";
        av[n++] = "127.0.0.1:0";
        av[n++] = "--data-dir";
        av[n++] = ddir;
        av[n++] = "--admin-token";
        av[n++] = TOKEN;
        av[n++] = ks;
        av[n++] = "--kernel-compact-interval=1s";
        av[n++] = "--log-level=info";
        if (pg) {
            av[n++] = "--db";
            av[n++] = (char *)pg;
        }
        av[n] = NULL;
        dup2(fd, 1);
        dup2(fd, 2);
        execv(bin, av);
        _exit(127);
    }
    close(fd);
    if (sv->pid < 0)
        return -1;
    for (int i = 0; i < 600; i++) {
        usleep(50000);
        slurp(sv->log, buf, sizeof(buf));
        if ((p = strstr(buf, "listening on http://"))) {
            p = strchr(p + strlen("listening on http://"), ':');
            snprintf(port, sizeof(port), "%.*s", 5, p ? p + 1 : "0");
            sv->port = (uint16_t)strtoul(port, NULL, 10);
            return sv->port ? 0 : -1;
        }
        if (waitpid(sv->pid, NULL, WNOHANG) == sv->pid)
            break;
    }
    fprintf(stderr, "bench_scale: the server did not start:\n%s\n", buf);
    return -1;
}

/* The server's CPU seconds and resident MB from /proc. */
static void server_use(pid_t pid, double *cpu, double *rss_mb)
{
    char path[64], buf[2048], *p;
    unsigned long long ut = 0, st = 0;
    long hz = sysconf(_SC_CLK_TCK);

    *cpu = *rss_mb = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (slurp(path, buf, sizeof(buf)) && (p = strrchr(buf, ')')) &&
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &st) == 2)
        *cpu = (double)(ut + st) / (double)hz;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (slurp(path, buf, sizeof(buf)) && (p = strstr(buf, "VmRSS:")))
        *rss_mb = strtod(p + 6, NULL) / 1024.0;
}

/* Bytes the server has written to storage (/proc/PID/io write_bytes:
 * its WAL, its checkpoints' copies into the database): per kernel, the
 * figure that grew over a long session (docs/server.md "100M a sixth
 * time"); 0 where the kernel does not account I/O. */
static double server_wbytes(pid_t pid)
{
    char path[64], buf[2048], *p;

    snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
    if (slurp(path, buf, sizeof(buf)) && (p = strstr(buf, "\nwrite_bytes:")))
        return strtod(p + 13, NULL);
    return 0;
}

/* MB of the database file and of everything else (the WAL) in dir. */
static void dir_mb(const char *dir, double *db, double *other)
{
    char d[1024], path[2048];
    DIR *h;
    struct dirent *e;
    struct stat st;

    *db = *other = 0;
    snprintf(d, sizeof(d), "%s/bench_scale", dir);
    if (!(h = opendir(d)))
        return;
    while ((e = readdir(h)))
        if (snprintf(path, sizeof(path), "%s/%s", d, e->d_name) <
                (int)sizeof(path) &&
            lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            *(strcmp(e->d_name, "gpufl.db") ? other : db) +=
                (double)st.st_size / 1048576.0;
    closedir(h);
}

/* Waits until the log has had no "compacted" line for QUIET_S seconds. */
static double compactor_quiet(const server *sv)
{
    static char buf[1 << 20];
    double t0 = now_s(), last = now_s();
    size_t seen = 0;

    while (now_s() - t0 < COMPACT_WAIT_S) {
        size_t n = 0;
        char *p = buf;
        sleep(1);
        slurp(sv->log, buf, sizeof(buf));
        while ((p = strstr(p, "compacted ")))
            n++, p++;
        if (n != seen) {
            seen = n;
            last = now_s();
        }
        if (now_s() - last >= QUIET_S)
            break;
    }
    return last - t0;
}

/* The kernel batches made on a thread of their own: made between the
 * requests, the generator's ~0.4 us a kernel (40 s at 100M) sat in every
 * batch's round trip - at 700k/s a third of it - so the rate printed was
 * partly the bench's own.  Two slots: the thread fills one while the other
 * is sent. */
typedef struct feeder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    body b[2];
    int full[2];
    kgen *g;
    size_t nk;
    pthread_t th;
} feeder;

static void *feeder_main(void *arg)
{
    feeder *f = arg;
    size_t made = 0;

    for (int i = 0; made < f->nk; i ^= 1) {
        size_t n =
            f->nk - made < BENCH_BATCH_LINES ? f->nk - made : BENCH_BATCH_LINES;
        pthread_mutex_lock(&f->mu);
        while (f->full[i])
            pthread_cond_wait(&f->cv, &f->mu);
        pthread_mutex_unlock(&f->mu);
        f->b[i].len = f->b[i].lines = 0;
        kgen_kernels(f->g, &f->b[i], n);
        made += n;
        pthread_mutex_lock(&f->mu);
        f->full[i] = 1;
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
    }
    return NULL;
}

/* The next batch (slot i), waiting for the thread to have made it. */
static body *feeder_take(feeder *f, int i)
{
    pthread_mutex_lock(&f->mu);
    while (!f->full[i])
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    return &f->b[i];
}

/* Slot i sent: the thread may fill it again. */
static void feeder_done(feeder *f, int i)
{
    pthread_mutex_lock(&f->mu);
    f->full[i] = 0;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* --queries-only: the database in DIR was filled by an earlier run with the
 * same KERNELS and NAMES; the kernels are generated again, not sent, for the
 * queries' time range, and the queries run once. So the query figures of a
 * 100M database can be taken again on a quiet machine without the ingest. */
static int queries_only(server *sv, int fd, kgen *g, body *b, size_t nk,
                        char *resp)
{
    for (size_t sent = 0; sent < nk; sent += BENCH_BATCH_LINES) {
        b->len = b->lines = 0;
        kgen_kernels(g, b,
                     nk - sent < BENCH_BATCH_LINES ? nk - sent
                                                   : BENCH_BATCH_LINES);
    }
    /* the generation takes ~40 s at 100M: past the server's idle timeout
     * for the connection opened before it */
    close(fd);
    fd = connect_to(sv->port);
    printf(" queries on the database as it is (--queries-only):\n");
    bench_queries(fd, TOKEN, SID, g->ts, resp, RESP_MAX);
    close(fd);
    kill(sv->pid, SIGTERM);
    waitpid(sv->pid, NULL, 0);
    free(b->p);
    free(resp);
    return 0;
}

int main(int argc, char **argv)
{
    const char *kstore = "blocks", *bin = NULL, *pos[4] = { NULL };
    char self[1024], binbuf[1100], *resp = malloc(RESP_MAX + 4096);
    size_t nk, npos = 0, sent = 0, kseg = 0, tenth;
    unsigned names;
    const char *dir, *pg;
    double t0, tseg, c0, cseg, cpu, rss, db, wal, w0, wseg, t_ing;
    double ph0[PH_N], ph1[PH_N];
    int ph_ok;
    server sv;
    body b;
    kgen g;
    feeder f;
    int fd, qonly = 0, inline_gen = 0, slot = 0;
    unsigned long long dup;

    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--kernel-store=", 15))
            kstore = argv[i] + 15;
        else if (!strcmp(argv[i], "--queries-only"))
            qonly = 1;
        else if (!strcmp(argv[i], "--inline-gen"))
            inline_gen = 1;
        else if (!strcmp(argv[i], "--server") && i + 1 < argc)
            bin = argv[++i];
        else if (argv[i][0] == '-' || npos == 4) {
            fprintf(stderr, "usage: bench_scale [--kernel-store=rows|blocks] "
                            "[--server PATH] [--queries-only] [--inline-gen] "
                            "KERNELS [NAMES "
                            "[DIR [PGURL]]]\n");
            return 2;
        } else
            pos[npos++] = argv[i];
    }
    nk = pos[0] ? strtoull(pos[0], NULL, 10) : 1000000;
    names = pos[1] ? (unsigned)strtoul(pos[1], NULL, 10) : 200;
    dir = pos[2] ? pos[2] : "/tmp";
    pg = pos[3];
    if (!bin) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[n > 0 ? n : 0] = 0;
        snprintf(binbuf, sizeof(binbuf), "%s/gpufl-server", dirname(self));
        bin = binbuf;
    }
    if (!resp || !nk || !names ||
        server_start(&sv, bin, dir, kstore, pg, qonly) != 0)
        return 1;
    printf("bench_scale: %zu kernels, %u names, one session over one HTTP "
           "connection into %s (--kernel-store=%s, %s; batches made %s)\n",
           nk, names, bin, kstore, pg ? "PostgreSQL" : "SQLite",
           inline_gen ? "between the requests (--inline-gen)"
                      : "on a thread of their own, two ahead");
    fd = connect_to(sv.port);
    memset(&b, 0, sizeof(b));
    kgen_init(&g, SID, names);
    kgen_dicts(&g, &b);
    if (qonly)
        return queries_only(&sv, fd, &g, &b, nk, resp);
    if (http(fd, "POST", "/api/v1/events/device", TOKEN, b.p, b.len, resp,
             RESP_MAX) != 200) {
        fprintf(stderr, "bench_scale: the dicts were refused: %.300s\n", resp);
        return 1;
    }
    tenth = nk / 10 ? nk / 10 : nk;
    /* the phases before (the dicts' request): the timed requests' own */
    ph_ok = ingest_phases(fd, resp, RESP_MAX, ph0) == 0;
    t0 = tseg = now_s();
    server_use(sv.pid, &c0, &rss);
    cseg = c0;
    w0 = wseg = server_wbytes(sv.pid);
    memset(&f, 0, sizeof(f));
    f.g = &g;
    f.nk = nk;
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    if (!inline_gen && pthread_create(&f.th, NULL, feeder_main, &f) != 0) {
        fprintf(stderr, "bench_scale: no generator thread\n");
        return 1;
    }
    while (sent < nk) {
        size_t n =
            nk - sent < BENCH_BATCH_LINES ? nk - sent : BENCH_BATCH_LINES;
        body *bp = &b;
        if (inline_gen) {
            b.len = b.lines = 0;
            kgen_kernels(&g, &b, n);
        } else {
            bp = feeder_take(&f, slot);
        }
        if (http(fd, "POST", "/api/v1/events/device", TOKEN, bp->p, bp->len,
                 resp, RESP_MAX) != 200) {
            fprintf(stderr, "bench_scale: POST after %zu kernels: %.300s\n",
                    sent, resp);
            return 1;
        }
        /* a database that already holds this session (PostgreSQL's
         * outlives the run) answers every line a duplicate: the rate
         * would be the replay check's, with nothing written */
        if ((dup = answer_u64(resp, "\"duplicate\":")) != 0) {
            fprintf(stderr,
                    "bench_scale: %llu of %zu kernels after %zu were"
                    " duplicates: the database already holds session %s,"
                    " so nothing would be measured but the replay check."
                    " Give an empty database (PostgreSQL: a new one, e.g."
                    " createdb and PGURL/NAME).\n",
                    (unsigned long long)dup, n, sent, SID);
            kill(sv.pid, SIGTERM);
            waitpid(sv.pid, NULL, 0);
            return 1;
        }
        if (!inline_gen) {
            feeder_done(&f, slot);
            slot ^= 1;
        }
        sent += n;
        if (sent - kseg >= tenth || sent == nk) {
            double t = now_s(), part = (double)(sent - kseg);
            double w = server_wbytes(sv.pid);
            server_use(sv.pid, &cpu, &rss);
            dir_mb(dir, &db, &wal);
            printf("  %10zu kernels  %8.0f events/s this part  %8.0f overall"
                   "  server %.2f CPU s per 1M  RSS %.0f MB  db %.0f MB"
                   " + WAL %.0f MB  written %.0f B/kernel\n",
                   sent, part / (t - tseg), (double)sent / (t - t0),
                   (cpu - cseg) / (part / 1e6), rss, db, wal,
                   (w - wseg) / part);
            fflush(stdout);
            tseg = t;
            cseg = cpu;
            wseg = w;
            kseg = sent;
        }
    }
    if (!inline_gen) {
        pthread_join(f.th, NULL); /* g.ts: the last kernel's, for the queries */
        free(f.b[0].p);
        free(f.b[1].p);
    }
    server_use(sv.pid, &cpu, &rss);
    t_ing = now_s() - t0;
    printf("  ingest: %.0f events/s, %.2f server CPU s per 1M, written"
           " %.0f B/kernel\n",
           (double)nk / t_ing, (cpu - c0) / ((double)nk / 1e6),
           (server_wbytes(sv.pid) - w0) / (double)nk);
    if (ph_ok && ingest_phases(fd, resp, RESP_MAX, ph1) == 0)
        ingest_phases_print(ph0, ph1, t_ing);
    printf(" queries right after the ingest:\n");
    bench_queries(fd, TOKEN, SID, g.ts, resp, RESP_MAX);
    if (!strcmp(kstore, "blocks")) {
        double w = compactor_quiet(&sv);
        close(fd);
        fd = connect_to(sv.port);
        server_use(sv.pid, &cpu, &rss);
        printf(" compactor done %.0f s after the ingest (RSS %.0f MB); the "
               "queries again:\n",
               w, rss);
        bench_queries(fd, TOKEN, SID, g.ts, resp, RESP_MAX);
    }
    close(fd);
    kill(sv.pid, SIGTERM);
    waitpid(sv.pid, NULL, 0);
    dir_mb(dir, &db, &wal);
    if (!pg)
        printf(" at rest after the server's shutdown (WAL checkpointed): "
               "%.1f MB = %.1f B/kernel (the whole database: kernels, "
               "rollups, dicts, indexes)\n",
               db + wal, (db + wal) * 1048576.0 / (double)nk);
    free(b.p);
    free(resp);
    return 0;
}
