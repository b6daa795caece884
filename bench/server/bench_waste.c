/*
 * bench_waste.c - GET /api/v1/fleet/waste over a month of a thousand GPUs
 * (docs/server.md "GPU waste"): the hourly rollup rows of GPUS GPUs over
 * DAYS days (8 GPUs a host, two models; each GPU-hour has one owner: one
 * of 200 users in one of 20 namespaces, a pod a day per GPU, a Slurm job
 * a day per GPU, one of 30 apps) are written straight into the database
 * the server's store made, with a GPU verdict an hour for every GPU, a
 * verdict a minute (what the daemon writes) for the first 20, and five
 * minutes of raw lines; then the query is timed through the store, best
 * of three, for several dimensions and steps.
 *
 *   bench_waste [GPUS [DAYS [DB]]]  (defaults 1000, 30, sqlite:/tmp/...)
 *
 * DB may be a postgresql:// URL (an empty database); a DB given is kept,
 * and a second run on it only queries.  Prints figures; not a test.
 */
#include "db.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOUR_NS (3600ull * 1000000000ull)
#define MIN_NS (60ull * 1000000000ull)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int run(sdb *db, const char *sql)
{
    if (sdb_exec(db, sql)) {
        fprintf(stderr, "bench_waste: %s: %s\n", sql, sdb_errmsg(db));
        return 1;
    }
    return 0;
}

static int step(sdb_stmt *st)
{
    int rc = sdb_step(st);
    sdb_reset(st);
    return rc == SDB_DONE ? 0 : 1;
}

static void bind_s(sdb_stmt *st, int i, const char *s)
{
    sdb_bind_text(st, i, s, strlen(s));
}

/* The owner of GPU g in hour h, in dimension dim (SRV_WBY_*). */
static void owner(unsigned g, unsigned h, int dim, char *out, size_t cap)
{
    unsigned day = h / 24, u = (g * 7 + day) % 200;
    switch (dim) {
    case SRV_WBY_USER: snprintf(out, cap, "user%03u", u); break;
    case SRV_WBY_NAMESPACE: snprintf(out, cap, "team%02u", u % 20); break;
    case SRV_WBY_POD:
        snprintf(out, cap, "team%02u/pod-%u-%u", u % 20, g, day);
        break;
    case SRV_WBY_JOB: snprintf(out, cap, "%u", 100000 + g * 64 + day); break;
    case SRV_WBY_APP: snprintf(out, cap, "app%02u", u % 30); break;
    case SRV_WBY_HOST: snprintf(out, cap, "node%04u", g / 8); break;
    default: snprintf(out, cap, "GPU-%08x-0000-4000-8000-%012u", g, g); break;
    }
}

static const char *model_of(unsigned g)
{
    return g % 4 == 0 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-80GB";
}

/* Rows of one dimension and hour: the GPUs' seconds summed per (key,
 * model), as the store's hourly rollup holds them (the daily one is
 * their sum per day; the first hour is a midnight, UTC). */
typedef struct acc {
    char key[96];
    const char *model;
    double busy, w[SRV_WASTE_N];
} acc;

static int fill(sdb *db, unsigned gpus, unsigned hours, uint64_t h0)
{
    sdb_stmt *st = NULL;
    acc *a = calloc(gpus, sizeof(*a));
    int rc = 1;

    if (!a || sdb_prepare(
                  db, "INSERT INTO wasteh VALUES(?,?,?,?,?,?,?,?,?,?,?)", &st))
        goto out;
    for (unsigned h = 0; h < hours; h++) {
        if (run(db, "BEGIN"))
            goto out;
        for (int dim = 0; dim < SRV_WBY_N; dim++) {
            unsigned n = 0;
            for (unsigned g = 0; g < gpus; g++) {
                char key[96];
                unsigned k;
                double busy = (double)((g * 31 + h * 17) % 3600);
                double idle = (3600 - busy) * 0.5;
                owner(g, h, dim, key, sizeof(key));
                /* the few owners of an hour: a linear look-up is fine */
                for (k = 0; k < n; k++)
                    if (a[k].model == model_of(g) && !strcmp(a[k].key, key))
                        break;
                if (k == n) {
                    memset(&a[n], 0, sizeof(a[n]));
                    snprintf(a[n].key, sizeof(a[n].key), "%s", key);
                    a[n].model = model_of(g);
                    n++;
                }
                a[k].busy += busy;
                a[k].w[0] += idle;
                a[k].w[1 + (g + h) % 4] += 3600 - busy - idle;
            }
            for (unsigned k = 0; k < n; k++) {
                sdb_bind_i64(st, 1, dim);
                sdb_bind_i64(st, 2, (int64_t)(h0 + h));
                bind_s(st, 3, a[k].key);
                bind_s(st, 4, a[k].model);
                sdb_bind_f64(st, 5, a[k].busy);
                for (int r = 0; r < SRV_WASTE_N; r++)
                    sdb_bind_f64(st, 6 + r, a[k].w[r]);
                sdb_bind_i64(st, 11, 0);
                if (step(st))
                    goto out;
            }
        }
        if (run(db, "COMMIT"))
            goto out;
    }
    /* the daily rollup is the sum of the hourly one */
    if (run(db, "INSERT INTO wasted SELECT dim, hour / 24, key, model,"
                " sum(busy), sum(w_idle), sum(w_held), sum(w_phantom),"
                " sum(w_stuck), sum(w_alloc), max(simulated) FROM wasteh"
                " GROUP BY dim, hour / 24, key, model"))
        goto out;
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "bench_waste: rollup rows: %s\n", sdb_errmsg(db));
    sdb_finalize(st);
    free(a);
    return rc;
}

/* Hourly verdicts of every GPU, a verdict a minute for the first 20
 * (the daemon's refresh), the latest per GPU, five minutes of lines. */
static int verdicts(sdb *db, unsigned gpus, unsigned hours, uint64_t t0,
                    uint64_t end)
{
    static const char *const states[] = { "BUSY",  "HELD", "BUSY",
                                          "EMPTY", "BUSY", "STUCK" };
    sdb_stmt *st = NULL, *fl = NULL, *wl = NULL, *vr = NULL;
    uint64_t seq = 0;
    int rc = 1;

    if (run(db, "INSERT INTO sessions(id, sid, app, host, start_ns, state,"
                " simulated) VALUES(1, 'be9e55e5-0000-4000-8000-000000000001',"
                " 'gpufl-idle', 'node0000', 0, 'running', 0)") ||
        sdb_prepare(db,
                    "INSERT INTO verdicts(sess, seq, ts, host, kind, dev,"
                    " vkey, state, since, simulated, body) VALUES(1, ?, ?,"
                    " ?, 'gpu', ?, ?, ?, ?, 0, '{}')",
                    &st) ||
        sdb_prepare(db, "INSERT INTO vruns VALUES(?, ?, ?, ?, ?, 1)", &vr) ||
        sdb_prepare(db,
                    "INSERT INTO fleet(host, kind, vkey, dev, ts, sess, seq,"
                    " simulated, body) VALUES(?, 'gpu', ?, ?, ?, 1, 0, 0, ?)",
                    &fl) ||
        sdb_prepare(db,
                    "INSERT INTO waste VALUES(1, ?, ?, ?, ?, ?, ?, 'u', '',"
                    " '', '', '', '', ?, ?, 30, 20, 5, 0, 0, 0, 0)",
                    &wl))
        goto out;
    for (unsigned g = 0; g < gpus; g++) {
        char host[32], vkey[16], uuid[64], body[256];
        uint64_t every = g < 20 ? MIN_NS : HOUR_NS;
        snprintf(host, sizeof(host), "node%04u", g / 8);
        snprintf(vkey, sizeof(vkey), "%u", g % 8);
        owner(g, 0, SRV_WBY_GPU, uuid, sizeof(uuid));
        if (run(db, "BEGIN"))
            goto out;
        /* the runs the store makes of them (sq_waste_run): an hour of
         * one state, or one verdict each an hour apart */
        for (uint64_t t = t0; t < t0 + hours * HOUR_NS; t += HOUR_NS) {
            uint64_t k = (t - t0) / HOUR_NS + g;
            bind_s(vr, 1, host);
            sdb_bind_i64(vr, 2, g % 8);
            sdb_bind_i64(vr, 3, (int64_t)t);
            sdb_bind_i64(vr, 4, (int64_t)(g < 20 ? t + HOUR_NS - MIN_NS : t));
            bind_s(vr, 5, states[k % 6]);
            if (step(vr))
                goto out;
        }
        for (uint64_t t = t0; t < t0 + hours * HOUR_NS; t += every) {
            uint64_t k = (t - t0) / HOUR_NS + g;
            sdb_bind_i64(st, 1, (int64_t)seq++);
            sdb_bind_i64(st, 2, (int64_t)t);
            bind_s(st, 3, host);
            sdb_bind_i64(st, 4, g % 8);
            bind_s(st, 5, vkey);
            bind_s(st, 6, states[k % 6]);
            sdb_bind_i64(st, 7, (int64_t)t);
            if (step(st))
                goto out;
        }
        snprintf(body, sizeof(body),
                 "{\"ts\":%llu,\"kind\":\"gpu\",\"dev\":%u,\"uuid\":\"%s\","
                 "\"model\":\"%s\",\"state\":\"%s\"}",
                 (unsigned long long)end, g % 8, uuid, model_of(g),
                 states[g % 6]);
        bind_s(fl, 1, host);
        bind_s(fl, 2, vkey);
        sdb_bind_i64(fl, 3, g % 8);
        sdb_bind_i64(fl, 4, (int64_t)end);
        bind_s(fl, 5, body);
        if (step(fl))
            goto out;
        for (unsigned m = 0; m < 5; m++) {
            uint64_t a = end - (5 - m) * MIN_NS;
            sdb_bind_i64(wl, 1, (int64_t)seq++);
            sdb_bind_i64(wl, 2, (int64_t)(a + MIN_NS));
            bind_s(wl, 3, host);
            sdb_bind_i64(wl, 4, g % 8);
            bind_s(wl, 5, uuid);
            bind_s(wl, 6, model_of(g));
            sdb_bind_i64(wl, 7, (int64_t)a);
            sdb_bind_i64(wl, 8, (int64_t)(a + MIN_NS));
            if (step(wl))
                goto out;
        }
        if (run(db, "COMMIT"))
            goto out;
    }
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "bench_waste: verdicts: %s\n", sdb_errmsg(db));
    sdb_finalize(st);
    sdb_finalize(fl);
    sdb_finalize(wl);
    sdb_finalize(vr);
    return rc;
}

static int filled(sdb *db)
{
    sdb_stmt *st = NULL;
    int n = 0;
    if (sdb_prepare(db, "SELECT count(*) FROM vruns", &st) == 0 &&
        sdb_step(st) == SDB_ROW)
        n = sdb_col_i64(st, 0) > 0;
    sdb_finalize(st);
    return n;
}

static int query(srv_store *s, srv_wasteq *q, const char *what, char *buf)
{
    double best = 1e9;
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        jw w;
        double t = now_s();
        jw_init(&w, buf, SRV_RESP_MAX);
        if (srv_store_q_waste(s, q, &w)) {
            fprintf(stderr, "bench_waste: query %s failed\n", what);
            return 1;
        }
        t = now_s() - t;
        if (t < best)
            best = t;
        len = w.len;
    }
    printf("  %-34s %8.1f ms  (%zu bytes)\n", what, best * 1e3, len);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned gpus = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000;
    unsigned days = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 30;
    char url[512], err[512];
    static const srv_price prices[] = { { "NVIDIA H100 80GB HBM3", 2.5 },
                                        { "*", 1.2 } };
    uint64_t h0 = 1796000000ull / 3600, t0 = h0 * HOUR_NS;
    uint64_t end = t0 + days * 24ull * HOUR_NS;
    srv_store *s = NULL;
    srv_wasteq q;
    char *buf = malloc(SRV_RESP_MAX);
    sdb *db = NULL;
    double t;
    /* skip: hours cut off the start, so the range begins at noon (whole
     * days from the daily rollup, the edge hours from the hourly one) */
    static const struct {
        int by;
        uint64_t step, skip;
    } cases[] = { { SRV_WBY_USER, 3600, 0 },      { SRV_WBY_USER, 86400, 0 },
                  { SRV_WBY_NAMESPACE, 3600, 0 }, { SRV_WBY_HOST, 3600, 0 },
                  { SRV_WBY_JOB, 3600, 0 },       { SRV_WBY_APP, 3600, 0 },
                  { SRV_WBY_POD, 86400, 0 },      { SRV_WBY_GPU, 86400, 0 },
                  { SRV_WBY_POD, 3600, 0 },       { SRV_WBY_GPU, 3600, 0 },
                  { SRV_WBY_POD, 3600, 12 },      { SRV_WBY_GPU, 3600, 12 },
                  { SRV_WBY_USER, 3600, 12 } };

    if (!buf || !gpus || !days)
        return 2;
    if (argc > 3)
        snprintf(url, sizeof(url), "%s", argv[3]);
    else {
        snprintf(url, sizeof(url), "sqlite:/tmp/bench_waste.%d.db",
                 (int)getpid());
        unlink(url + 7);
    }
    if (srv_store_open(url, 2, &s, err, sizeof(err))) {
        fprintf(stderr, "bench_waste: %s\n", err);
        return 1;
    }
    srv_store_close(s); /* it made the schema */
    if (sdb_open(url, 0, &db, err, sizeof(err)))
        return 1;
    t = now_s();
    /* a DB given that a run filled already: queries only */
    if (argc > 3 && filled(db)) {
        printf("(filled before: queries only)\n");
    } else if (fill(db, gpus, days * 24, h0) ||
               verdicts(db, gpus, days * 24, t0, end)) {
        return 1;
    }
    if (sdb_dialect(db) == SDB_POSTGRES)
        run(db, "ANALYZE");
    sdb_close(db);
    printf("gpufl-server /fleet/waste: %u GPUs x %u days of hourly rollup"
           " (%s), ready in %.1f s\n",
           gpus, days, strncmp(url, "sqlite:", 7) ? "PostgreSQL" : "SQLite",
           now_s() - t);
    if (srv_store_open(url, 2, &s, err, sizeof(err))) {
        fprintf(stderr, "bench_waste: %s\n", err);
        return 1;
    }
    memset(&q, 0, sizeof(q));
    q.from = t0;
    q.to = end;
    q.now = end;
    q.limit = 20;
    q.prices = prices;
    q.nprices = 2;
    q.currency = "USD";
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char what[96];
        q.by = cases[i].by;
        q.step_s = cases[i].step;
        q.from = t0 + cases[i].skip * HOUR_NS;
        snprintf(what, sizeof(what), "by=%s step=%llu (%u d%s)",
                 srv_waste_by[q.by], (unsigned long long)q.step_s, days,
                 cases[i].skip ? " from noon" : "");
        if (query(s, &q, what, buf))
            return 1;
    }
    /* the last day from the lines of the last five minutes only */
    srv_store_close(s);
    if (argc <= 3)
        unlink(url + 7);
    free(buf);
    printf("  (target <= 200 ms; 20 GPU strips included, 20 of them with a"
           " verdict a minute)\n");
    return 0;
}
