/*
 * bench_regress.c - the regression scan's cost (docs/server.md "Figures"):
 * five ended baseline sessions and one current session of KERNELS kernels
 * each over NAMES kernel names are stored straight through the store
 * (SQLite, DIR/bench_regress.db); the baselines are scanned, then the
 * time of the current session's scan against them is printed, with what
 * it found (the first tenth of the names run 20 % slower in it).  The
 * kernels run in REG_STEPS instances of the scope "step", so the scan's
 * scope paths (one path of REG_STEPS instances per session) are in it.
 *
 *   bench_regress [KERNELS [NAMES [DIR]]]  (defaults 1000000, 200, /tmp)
 *
 * and the job query (GET /api/v1/jobs/{id}) of RANKS sessions of KERNELS
 * kernels each in STEPS steps of the scope "step", rank 2's kernels (but
 * NCCL's) 30 % slower (best of three runs):
 *
 *   bench_regress jobs [RANKS [KERNELS [STEPS [DIR]]]]  (64, 100000, 100)
 *
 * Prints figures; not a test.
 */
#include "ingest.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define LINES 10000
#define REG_STEPS 1000
#define SIDF "be9e55e5-0000-4000-8000-0000000000%02u"

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

typedef struct batch {
    char *p;
    size_t len, cap, n;
    srv_ev *ev;
    jsonl_tok *tok;
    ingest_arena a;
    srv_store *st;
    uint64_t stored;
    int stream; /* SRV_ST_* of its lines */
} batch;

static void flush(batch *b)
{
    jsonl_doc d;
    size_t pos = 0, n, k = 0;
    const char *line;
    char why[INGEST_REASON_MAX];
    srv_ingest_res r;

    jsonl_doc_init(&d, b->tok, INGEST_MAX_TOKENS);
    b->a.len = 0;
    while (jsonl_line_next(b->p, b->len, &pos, &line, &n))
        if (ingest_line_parse(&d, b->stream, line, n, &b->a, &b->ev[k], why) ==
            0)
            k++;
    if (srv_store_ingest(b->st, b->ev, k, &r)) {
        fprintf(stderr, "bench_regress: ingest failed\n");
        exit(1);
    }
    b->stored += r.accepted;
    b->len = b->n = 0;
}

static void line(batch *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void line(batch *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->cap - b->len < 1024) {
        b->cap = b->cap * 2 + 4096;
        if (!(b->p = realloc(b->p, b->cap)))
            exit(1);
    }
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    if (++b->n == LINES)
        flush(b);
}

/* One session: its line, NAMES name dicts, KERNELS kernels in REG_STEPS
 * steps (scope lines into sc), its end. */
static void session(batch *b, batch *sc, unsigned s, size_t nk, unsigned names,
                    double slow)
{
    uint64_t ts = 1800000000000000000ull + (uint64_t)s * 1000000000000ull;
    uint64_t x = 0x9e3779b97f4a7c15ull * (s + 1), b0 = ts;
    size_t seq = 0, sseq = 0, per = nk / REG_STEPS ? nk / REG_STEPS : 1;
    char sid[40];

    snprintf(sid, sizeof(sid), SIDF, s);
    line(b,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"session\",\"app\":\"bench\",\"host\":\"bench\","
         "\"start\":%llu,\"streams\":[\"device\",\"scope\"]}\n",
         sid, seq++, (unsigned long long)ts, (unsigned long long)ts);
    line(b,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"dict\",\"id\":%u,\"kind\":\"name\",\"name\":\"step\"}\n",
         sid, seq++, (unsigned long long)ts, names + 1);
    line(sc,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"dict\",\"id\":1,\"kind\":\"path\",\"parent\":0,"
         "\"name\":%u,\"depth\":1}\n",
         sid, sseq++, (unsigned long long)ts, names + 1);
    for (unsigned i = 1; i <= names; i++)
        line(b,
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,"
             "\"ts\":%llu,\"type\":\"dict\",\"id\":%u,\"kind\":\"name\","
             "\"name\":\"kernel_%u\"}\n",
             sid, seq++, (unsigned long long)ts, i, i);
    for (size_t k = 0; k < nk; k++) {
        unsigned name;
        double u, g;
        uint64_t dur;
        if (k % per == 0) {
            if (k)
                line(sc,
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,"
                     "\"ts\":%llu,\"type\":\"scope_end\",\"id\":%zu,"
                     "\"name\":%u,\"path\":1,\"depth\":1,\"tid\":1,"
                     "\"dur\":%llu}\n",
                     sid, sseq++, (unsigned long long)ts, k / per, names + 1,
                     (unsigned long long)(ts - b0));
            b0 = ts;
            line(sc,
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,"
                 "\"ts\":%llu,\"type\":\"scope_begin\",\"id\":%zu,"
                 "\"name\":%u,\"path\":1,\"depth\":1,\"tid\":1}\n",
                 sid, sseq++, (unsigned long long)ts, k / per + 1, names + 1);
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        name = 1 + (unsigned)(x % names);
        u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
        /* log-normal-ish around 10 us x the name's own scale */
        g = (u - 0.5) * 0.4;
        dur = (uint64_t)(10000.0 * (1 + name % 7) * exp(g) *
                         (name <= names / 10 ? slow : 1.0));
        ts += dur + 500;
        line(b,
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,"
             "\"ts\":%llu,\"type\":\"kernel\",\"dev\":0,\"stream\":7,"
             "\"name\":%u,\"dur\":%llu}\n",
             sid, seq++, (unsigned long long)ts, name, (unsigned long long)dur);
    }
    line(sc,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"scope_end\",\"id\":%zu,\"name\":%u,\"path\":1,"
         "\"depth\":1,\"tid\":1,\"dur\":%llu}\n",
         sid, sseq++, (unsigned long long)ts, (nk - 1) / per + 1, names + 1,
         (unsigned long long)(ts - b0));
    line(b,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"session_end\",\"reason\":\"exit\"}\n",
         sid, seq, (unsigned long long)ts);
    line(sc,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"session_end\",\"reason\":\"exit\"}\n",
         sid, sseq, (unsigned long long)ts);
    flush(b);
    flush(sc);
}

/* One rank of a job: kernels in steps of the scope "step" (device lines
 * into b, scope lines into sc), rank 2's kernels (but NCCL's) 30 %
 * slower. */
static void rank_session(batch *b, batch *sc, unsigned r, unsigned ranks,
                         size_t nk, size_t steps)
{
    uint64_t ts = 1900000000000000000ull;
    uint64_t x = 0x9e3779b97f4a7c15ull * (r + 101);
    size_t seq = 0, sseq = 0, per = nk / steps;
    char sid[40];

    snprintf(sid, sizeof(sid), "be9e55e5-0000-4000-8000-0000000%05u",
             r % 100000);
    line(b,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"session\",\"app\":\"jobbench\",\"host\":\"h%u\","
         "\"start\":%llu,\"streams\":[\"device\",\"scope\"],\"job\":\"bj\","
         "\"rank\":%u,\"world_size\":%u}\n",
         sid, seq++, (unsigned long long)ts, r, (unsigned long long)ts, r,
         ranks);
    line(b,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"dict\",\"id\":99,\"kind\":\"name\",\"name\":\"step\"}\n",
         sid, seq++, (unsigned long long)ts);
    for (unsigned i = 1; i <= 20; i++)
        line(b,
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,"
             "\"ts\":%llu,\"type\":\"dict\",\"id\":%u,\"kind\":\"name\","
             "\"name\":\"%s_%u\"}\n",
             sid, seq++, (unsigned long long)ts, i,
             i == 20 ? "ncclDevKernel_AllReduce" : "kernel", i);
    line(sc,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"dict\",\"id\":100,\"kind\":\"path\",\"parent\":0,"
         "\"name\":99,\"depth\":1}\n",
         sid, sseq++, (unsigned long long)ts);
    for (size_t st = 0; st < steps; st++) {
        uint64_t b0 = ts;
        line(sc,
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,"
             "\"ts\":%llu,\"type\":\"scope_begin\",\"id\":%zu,\"name\":99,"
             "\"path\":100,\"depth\":1,\"tid\":1}\n",
             sid, sseq++, (unsigned long long)ts, st + 1);
        for (size_t k = 0; k < per; k++) {
            unsigned name;
            uint64_t dur;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            name = 1 + (unsigned)(x % 20);
            dur = 5000 + x % 1000;
            if (name != 20 && r == 2)
                dur = dur * 13 / 10;
            ts += dur + 200;
            line(b,
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,"
                 "\"ts\":%llu,\"type\":\"kernel\",\"dev\":0,\"stream\":7,"
                 "\"name\":%u,\"dur\":%llu,\"scope\":%zu}\n",
                 sid, seq++, (unsigned long long)ts, name,
                 (unsigned long long)dur, st + 1);
        }
        line(sc,
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,"
             "\"ts\":%llu,\"type\":\"scope_end\",\"id\":%zu,\"name\":99,"
             "\"path\":100,\"depth\":1,\"tid\":1,\"dur\":%llu}\n",
             sid, sseq++, (unsigned long long)ts, st + 1,
             (unsigned long long)(ts - b0));
    }
    line(b,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"session_end\",\"reason\":\"exit\"}\n",
         sid, seq, (unsigned long long)ts);
    line(sc,
         "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%zu,\"ts\":%llu,"
         "\"type\":\"session_end\",\"reason\":\"exit\"}\n",
         sid, sseq, (unsigned long long)ts);
    flush(b);
    flush(sc);
}

/* bench_regress jobs RANKS KERNELS STEPS [DIR]: GET /jobs/{id}'s query. */
static int bench_jobs(int argc, char **argv, batch *b)
{
    unsigned ranks = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 64;
    size_t nk = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
    size_t steps = argc > 4 ? strtoull(argv[4], NULL, 10) : 100;
    const char *dir = argc > 5 ? argv[5] : "/tmp";
    char path[1024], err[256], *buf = malloc(SRV_RESP_MAX);
    batch sc = *b;
    srv_q q;
    jw w;
    double t0, c0, best = 1e9, cbest = 1e9;
    int rc = 0;

    if (!buf || !ranks || steps < 3 || nk < steps)
        return 2;
    sc.p = NULL;
    sc.cap = sc.len = sc.n = 0;
    sc.stream = SRV_ST_SCOPE;
    snprintf(path, sizeof(path), "%s/bench_jobs.db", dir);
    unlink(path);
    if (srv_store_open(path, 2, &b->st, err, sizeof(err))) {
        fprintf(stderr, "bench_regress: %s\n", err);
        return 1;
    }
    sc.st = b->st;
    t0 = now_s();
    for (unsigned r = 0; r < ranks; r++)
        rank_session(b, &sc, r, ranks, nk, steps);
    printf("bench_regress jobs: %u ranks of %zu kernels in %zu steps stored "
           "in %.1f s\n",
           ranks, nk, steps, now_s() - t0);
    memset(&q, 0, sizeof(q));
    q.job = "bj";
    for (int i = 0; i < 3 && !rc; i++) {
        double t, c;
        jw_init(&w, buf, SRV_RESP_MAX);
        t0 = now_s();
        c0 = cpu_s();
        rc = srv_store_q_job(b->st, &q, &w);
        t = now_s() - t0;
        c = cpu_s() - c0;
        best = t < best ? t : best;
        cbest = c < cbest ? c : cbest;
    }
    printf("  GET /api/v1/jobs/{id}: best of 3 %.1f ms (%.1f ms CPU), %zu "
           "bytes; %s\n",
           best * 1e3, cbest * 1e3, w.len,
           rc                                            ? "FAILED"
           : strstr(buf, "\"stragglers\":[{\"rank\":2,") ? "rank 2 named"
                                                         : "rank 2 NOT named");
    if (getenv("BENCH_SHOW"))
        printf("%.*s\n", (int)w.len, buf);
    srv_store_close(b->st);
    unlink(path);
    free(sc.p);
    free(buf);
    return rc ? 1 : 0;
}

static void found(void *arg, const srv_regress_sum *sum)
{
    srv_regress_sum *out = arg;
    *out = *sum;
}

int main(int argc, char **argv)
{
    size_t nk = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    unsigned names = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 200;
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    srv_regress_cfg cfg = { 5, 0.05 };
    srv_regress_sum sum;
    char path[1024], err[256];
    batch b, sc;
    uint32_t done = 0;
    double t0, t1, c0, c1;

    memset(&b, 0, sizeof(b));
    b.ev = malloc((LINES + 1) * sizeof(*b.ev));
    b.tok = malloc(INGEST_MAX_TOKENS * sizeof(*b.tok));
    b.a.cap = 64u << 20;
    b.a.buf = malloc(b.a.cap);
    b.stream = SRV_ST_DEVICE;
    if (argc > 1 && !strcmp(argv[1], "jobs"))
        return b.ev && b.tok && b.a.buf ? bench_jobs(argc, argv, &b) : 1;
    if (names < 10 || nk < names) {
        fprintf(stderr, "usage: bench_regress [KERNELS [NAMES>=10 [DIR]]]\n"
                        "       bench_regress jobs [RANKS [KERNELS [STEPS "
                        "[DIR]]]]\n");
        return 2;
    }
    snprintf(path, sizeof(path), "%s/bench_regress.db", dir);
    unlink(path);
    if (!b.ev || !b.tok || !b.a.buf ||
        srv_store_open(path, 2, &b.st, err, sizeof(err))) {
        fprintf(stderr, "bench_regress: %s\n", err);
        return 1;
    }
    sc = b;
    sc.p = NULL;
    sc.cap = sc.len = sc.n = 0;
    sc.stream = SRV_ST_SCOPE;
    t0 = now_s();
    for (unsigned s = 0; s < 5; s++)
        session(&b, &sc, s, nk, names, 1.0);
    t1 = now_s();
    printf("bench_regress: 5 baseline sessions of %zu kernels, %u names: "
           "stored in %.1f s\n",
           nk, names, t1 - t0);
    if (srv_store_regress_scan(b.st, &cfg, 64, NULL, NULL, &done) ||
        done != 5) {
        fprintf(stderr, "bench_regress: baseline scan failed\n");
        return 1;
    }
    session(&b, &sc, 5, nk, names, 1.2);
    memset(&sum, 0, sizeof(sum));
    t0 = now_s();
    c0 = cpu_s();
    if (srv_store_regress_scan(b.st, &cfg, 64, found, &sum, &done) ||
        done != 1) {
        fprintf(stderr, "bench_regress: scan failed\n");
        return 1;
    }
    t1 = now_s();
    c1 = cpu_s();
    printf("  scan of one %zu-kernel session against 5: %.1f ms (%.1f ms CPU);"
           " %u slower "
           "(of %u made 20 %% slower), %u faster, %u "
           "new, %u vanished, %u count\n",
           nk, (t1 - t0) * 1e3, (c1 - c0) * 1e3, sum.n_slower, names / 10,
           sum.n_faster, sum.n_new, sum.n_vanished, sum.n_count);
    for (size_t i = 0; i < sum.nitems; i++)
        if (strcmp(sum.items[i].subject, "kernel"))
            printf("  %s %s %s x%.3f\n", sum.items[i].kind,
                   sum.items[i].subject, sum.items[i].name, sum.items[i].ratio);
    srv_store_close(b.st);
    free(sc.p);
    unlink(path);
    return 0;
}
