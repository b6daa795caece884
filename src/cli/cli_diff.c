/*
 * cli_diff.c - `gpufl diff BASE NEW [--json] [--threshold PCT]`: what got
 * slower or faster between two runs, by kernel name and by scope path,
 * with the ratio of the medians and its interval (docs/analysis.md "gpufl
 * diff").  BASE and NEW are log folders or session files (src/report
 * reads them), or with --server gpufl-server session ids (cli_diff_srv.c).
 * The comparison is src/analysis/diff.h's.
 *
 * Exit codes are a CI gate's (the pytest-benchmark / asv habit): 3 when a
 * significant regression was found, 0 when none, 1 a runtime failure, 2 a
 * usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"
#include "cli_diff_int.h"
#include "cli_int.h"
#include "common/buf.h"
#include "common/jw.h"
#include "common/log.h"
#include "common/opt.h"
#include "gpufl/gpufl.h"
#include "report/report.h"

/* The exit status of a run that found a regression. */
#define DIFF_EXIT_REGRESSION 3
/* Rows of each verdict printed as text (--json lists all). */
#define DIFF_TEXT_ROWS 50
/* Bytes of a name shown in the text table. */
#define DIFF_TEXT_NAME 100

#define T diff_opts
static const opt_def diff_rows[] = {
    { .name = "threshold",
      .type = OPT_FLOAT,
      OPT_F_DBL(T, threshold),
      .def = "5",
      .fmin = 0.1,
      .fmax = 1000,
      .arg = "PCT",
      .help = "The smallest shift of a median reported, in percent: a "
              "change is reported only when its 95 % interval excludes "
              "no change and it exceeds both PCT and the spread BASE's own "
              "runs show (docs/analysis.md)." },
    { .name = "json",
      .type = OPT_BOOL,
      OPT_F_SINT(T, json),
      .flags = OPT_CLI_ONLY,
      .help = "Print one JSON document (every name compared, with its "
              "figures) instead of the text tables." },
    { .name = "server",
      .type = OPT_STR,
      OPT_F_PTR(T, server),
      .arg = "URL",
      .help = "BASE and NEW are session ids (or comma lists of them, one "
              "run each) on this gpufl-server, read through GET "
              "/api/v1/sessions/{id}/durations." },
    { .name = "token",
      .type = OPT_STR,
      OPT_F_PTR(T, token),
      .arg = "T",
      .flags = OPT_SECRET,
      .help = "Bearer token for --server (role read); also GPUFL_TOKEN." },
    { .name = "ca-file",
      .type = OPT_STR,
      OPT_F_PTR(T, ca_file),
      .arg = "FILE",
      .help = "PEM file of the CAs an https --server is verified with (peer "
              "and host name, always); default the system's CA store." },
    { .name = "timeout",
      .type = OPT_DUR,
      .unit = OPT_MS,
      .bare = OPT_SEC,
      OPT_F_UINT(T, timeout_ms),
      .def = "60s",
      .min = 100,
      .max = 3600000,
      .arg = "DUR",
      .help = "Time allowed for each request to --server (a bare number is "
              "seconds)." },
    GLOG_OPT_ROWS(T, log_level, log_format),
};
#undef T

const opt_prog cli_diff_prog = {
    .name = "gpufl diff",
    .env_prefix = "GPUFL_DIFF_",
    .opts = diff_rows,
    .n = sizeof diff_rows / sizeof diff_rows[0],
    .size = sizeof(diff_opts),
    .usage =
        "usage: gpufl diff BASE NEW [--threshold PCT] [--json]\n"
        "       gpufl diff --server URL [--token T] BASE_ID[,ID...] "
        "NEW_ID[,ID...]\n\n"
        "Compares two runs, kernel by kernel name and scope by scope path: "
        "the ratio of\nthe median durations (NEW over BASE) with its 95 % "
        "interval, and what got\nslower or faster beyond the threshold and "
        "the runs' own noise.  BASE and NEW\nare log folders (every session "
        "in one is one run of that side) or one session's\nfiles "
        "(DIR/PREFIX or DIR/PREFIX.device.log); with --server, session "
        "ids.\n",
    .tail = "Exit codes: 0 no regression, 3 a significant regression (a "
            "kernel or scope\nslower), 1 failure (unreadable logs, server "
            "error), 2 usage error.\n",
    .flags = OPT_P_ARGS,
};

static const char *kind_name(int kind)
{
    return kind == DF_SCOPE ? "scope" : "kernel";
}

static void put_ns(FILE *f, double ns)
{
    if (ns >= 1e9)
        fprintf(f, "%8.2f s ", ns / 1e9);
    else if (ns >= 1e6)
        fprintf(f, "%8.2f ms", ns / 1e6);
    else if (ns >= 1e3)
        fprintf(f, "%8.1f us", ns / 1e3);
    else
        fprintf(f, "%8.0f ns", ns);
}

static void print_text(FILE *f, const df_result *r, const diff_opts *o,
                       const df_side *base, const df_side *cur)
{
    static const int shown[] = { DF_SLOWER, DF_FASTER };
    fprintf(f,
            "gpufl diff: %zu base run(s), %zu new run(s); %zu kernel names "
            "and %zu scope paths compared; threshold %.1f%%\n",
            base->n, cur->n, r->compared[0], r->compared[1], o->threshold);
    for (size_t v = 0; v < sizeof shown / sizeof shown[0]; v++) {
        size_t rows = 0;
        for (size_t i = 0; i < r->n; i++) {
            const df_finding *x = &r->f[i];
            if (x->verdict != shown[v])
                continue;
            if (!rows++)
                fprintf(f,
                        "\n-- %s --\n   ratio  95%% interval       "
                        "p    base p50     new p50   calls  what\n",
                        shown[v] == DF_SLOWER ? "slower" : "faster");
            if (rows > DIFF_TEXT_ROWS)
                continue;
            fprintf(f, "  x%.3f  %.3f-%.3f  %7.1e ", x->r.ratio, x->r.lo,
                    x->r.hi, x->r.p);
            put_ns(f, x->r.base_median);
            fputc(' ', f);
            put_ns(f, x->r.cur_median);
            fprintf(f, " %7.0f  %s %.*s\n", x->cur_calls, kind_name(x->kind),
                    DIFF_TEXT_NAME, x->name);
        }
        if (rows > DIFF_TEXT_ROWS)
            fprintf(f, "  ... %zu more (--json lists all)\n",
                    rows - DIFF_TEXT_ROWS);
    }
    if (r->added || r->vanished) {
        fprintf(f, "\n-- new and vanished --\n");
        for (size_t i = 0; i < r->n; i++) {
            const df_finding *x = &r->f[i];
            if (x->verdict != DF_NEW && x->verdict != DF_VANISHED)
                continue;
            fprintf(f, "  %-8s %7.0f calls  %s %.*s\n",
                    df_verdict_names[x->verdict],
                    x->verdict == DF_NEW ? x->cur_calls : x->base_calls,
                    kind_name(x->kind), DIFF_TEXT_NAME, x->name);
        }
    }
    if (r->slower)
        fprintf(f, "\nREGRESSION: %zu slower, %zu faster\n", r->slower,
                r->faster);
    else
        fprintf(f, "\nno regression (%zu faster)\n", r->faster);
}

typedef struct json_ctx {
    const df_result *r;
    const diff_opts *o;
    const df_side *base, *cur;
} json_ctx;

static void json_runs(jw *w, const char *key, const df_side *s)
{
    jw_key(w, key);
    jw_arr_begin(w);
    for (size_t i = 0; i < s->n; i++)
        jw_str(w, s->g[i].id);
    jw_arr_end(w);
}

static void json_fn(jw *w, void *ud)
{
    const json_ctx *j = ud;
    const df_result *r = j->r;
    jw_obj_begin(w);
    json_runs(w, "base_runs", j->base);
    json_runs(w, "new_runs", j->cur);
    jw_key(w, "threshold_pct");
    jw_f64(w, j->o->threshold, 3);
    jw_kv_u64(w, "kernels_compared", r->compared[0]);
    jw_kv_u64(w, "scopes_compared", r->compared[1]);
    jw_kv_u64(w, "slower", r->slower);
    jw_kv_u64(w, "faster", r->faster);
    jw_kv_u64(w, "new", r->added);
    jw_kv_u64(w, "vanished", r->vanished);
    jw_key(w, "regression");
    jw_bool(w, r->slower > 0);
    jw_key(w, "items");
    jw_arr_begin(w);
    for (size_t i = 0; i < r->n; i++) {
        const df_finding *x = &r->f[i];
        jw_obj_begin(w);
        jw_kv_str(w, "kind", kind_name(x->kind));
        jw_kv_str(w, "name", x->name);
        jw_kv_str(w, "verdict", df_verdict_names[x->verdict]);
        jw_key(w, "base_calls");
        jw_f64(w, x->base_calls, 1);
        jw_key(w, "new_calls");
        jw_f64(w, x->cur_calls, 1);
        jw_key(w, "judged");
        jw_bool(w, x->judged);
        if (x->judged) {
            jw_key(w, "base_median_ns");
            jw_f64(w, x->r.base_median, 1);
            jw_key(w, "new_median_ns");
            jw_f64(w, x->r.cur_median, 1);
            jw_key(w, "ratio");
            jw_f64(w, x->r.ratio, 4);
            jw_key(w, "lo");
            jw_f64(w, x->r.lo, 4);
            jw_key(w, "hi");
            jw_f64(w, x->r.hi, 4);
            jw_key(w, "p");
            jw_f64(w, x->r.p, 8);
            jw_key(w, "noise");
            jw_f64(w, x->r.noise, 4);
        }
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
}

static int print_json(FILE *f, const df_result *r, const diff_opts *o,
                      const df_side *base, const df_side *cur)
{
    json_ctx j = { r, o, base, cur };
    gbuf g;
    int rc;
    gbuf_init(&g, (size_t)1 << 30);
    rc = jw_gbuf_run(&g, json_fn, &j);
    if (!rc) {
        fwrite(g.p, 1, g.len, f);
        fputc('\n', f);
    }
    gbuf_release(&g);
    return rc;
}

/* One side from a path or (with --server) ids: 0 or 1 (said). */
static int load(const diff_opts *o, const char *what, df_side *side)
{
    char err[1024];
    int rc;
    if (o->server)
        rc = cli_diff_srv_load(o, what, side, err, sizeof err);
    else
        rc = rpt_diff_load(what, side, stderr, err, sizeof err);
    if (rc) {
        glog_error("diff", "%s", err);
        return 1;
    }
    return 0;
}

int cli_diff_main(int argc, char **argv)
{
    static opt_ctx c; /* large: its origin table */
    diff_opts o;
    df_side base, cur;
    df_result res;
    an_opts ao;
    int rc;

    df_side_init(&base);
    df_side_init(&cur);
    memset(&res, 0, sizeof res);
    glog_setup("gpufl diff", GLOG_INFO, GLOG_TEXT);
    rc = opt_cli(&c, &cli_diff_prog, &o, NULL, argc, argv);
    if (rc)
        goto out;
    glog_setup("gpufl diff", o.log_level, o.log_format);
    if (c.nargs != 2) {
        glog_error("diff", "BASE and NEW, please (see gpufl diff --help)");
        rc = 2;
        goto out;
    }
    /* a flag that does nothing is a mistake; the same in the environment
     * (set for server runs of a CI job) is not */
    if (!o.server &&
        (opt_source(&cli_diff_prog, c.org, "token") == OPT_SRC_FLAG ||
         opt_source(&cli_diff_prog, c.org, "ca-file") == OPT_SRC_FLAG)) {
        glog_error("diff", "--token and --ca-file go with --server");
        rc = 2;
        goto out;
    }
    rc = load(&o, c.args[0], &base);
    if (!rc)
        rc = load(&o, c.args[1], &cur);
    if (rc)
        goto out;
    an_opts_init(&ao);
    ao.min_shift = o.threshold / 100.0;
    rc = df_compare(&base, &cur, &ao, &res);
    if (rc) {
        glog_error("diff", "comparing: %s", gpufl_strerror(rc));
        rc = 1;
        goto out;
    }
    if (o.json)
        rc = print_json(stdout, &res, &o, &base, &cur) ? 1 : 0;
    else
        print_text(stdout, &res, &o, &base, &cur);
    if (fflush(stdout))
        rc = 1;
    if (!rc && res.slower)
        rc = DIFF_EXIT_REGRESSION;
out:
    df_result_release(&res);
    df_side_release(&base);
    df_side_release(&cur);
    opt_release(&cli_diff_prog, &o);
    return rc < 0 ? 0 : rc;
}
