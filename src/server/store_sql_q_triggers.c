/*
 * store_sql_q_triggers.c - what made libgpufl's flight recorder write a
 * dump (docs/recorder.md), as the session list and a session's detail
 * show it.  The trigger lines are stored with the session's other lines
 * (table lines, type EV_TRIGGER); the partial index lines_trigger finds
 * them without reading the rest.  Every stream of a dump holds one line
 * per firing, all with the firing's time: a firing is the lines of one
 * ts and kind, whatever streams reached the server so far.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <string.h>

#include "common/jsonl.h"
#include "srv_json.h"
#include "ingest.h"
#include "store_sql_q.h"

/* A trigger line has a dozen members and a window of eight. */
#define TRG_TOKENS 64
#define TRG_KIND_MAX 32
/* Firings listed in a session's detail, at most (a live dump extended
 * by triggers in a loop has more: "triggers_cut" says so). */
#define TRG_LIST_MAX 256
/* A stored trigger line is well under this (its detail at most 255
 * bytes); a longer row is damaged and skipped. */
#define TRG_BODY_MAX 4096

/* The window members summed over a firing's streams. */
static const char *const win_sum[] = { "lines", "bytes", "evicted",
                                       "evicted_bytes", "aged" };
#define WIN_SUM_N (sizeof win_sum / sizeof win_sum[0])

typedef struct firing {
    int64_t ts;
    char kind[TRG_KIND_MAX];
    int open;         /* a firing is being gathered */
    unsigned streams; /* bit per stream */
    int has_win;
    uint64_t win[WIN_SUM_N], cap, dur_ms;
    int has_dur;
} firing;

/* Parses one stored trigger line; -1 when it is not one (the server
 * checked it at ingest, so only a damaged row is). */
static int parse(jsonl_doc *d, const char *body, char *kind)
{
    size_t n;
    if (!body || strlen(body) >= TRG_BODY_MAX ||
        jsonl_doc_parse_obj(d, body, strlen(body)) ||
        jsonl_tok_str(d, jsonl_doc_find(d, "trigger"), kind, TRG_KIND_MAX, &n))
        return -1;
    return 0;
}

static void copy_member(jw *w, const jsonl_doc *d, const char *key)
{
    uint32_t t = jsonl_doc_find(d, key);
    if (t == JSONL_NOTFOUND)
        return;
    jw_key(w, key);
    srv_jw_copy(w, d, t);
}

void sq_trigger_summary(jw *w, int64_t count, const char *last_body)
{
    jsonl_tok tok[TRG_TOKENS];
    jsonl_doc d;
    char kind[TRG_KIND_MAX];

    if (count <= 0)
        return;
    jsonl_doc_init(&d, tok, TRG_TOKENS);
    jw_key(w, "trigger");
    jw_obj_begin(w);
    jw_kv_i64(w, "count", count);
    if (parse(&d, last_body, kind) == 0) {
        jw_kv_str(w, "last", kind);
        copy_member(w, &d, "detail");
    }
    jw_obj_end(w);
}

/* The firing's own members (its first line's: trigger, detail, dump,
 * live_ms, repeats), then what was gathered over its streams. */
static void firing_end(jw *w, const firing *f, jsonl_doc *first)
{
    static const char *const own[] = { "detail", "dump", "live_ms", "repeats" };
    jw_obj_begin(w);
    srv_jw_kv_dec(w, "ts", f->ts);
    jw_kv_str(w, "trigger", f->kind);
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        copy_member(w, first, own[i]);
    jw_key(w, "streams");
    jw_arr_begin(w);
    for (int st = 0; st < SRV_ST_N; st++)
        if (f->streams & (1u << st))
            jw_str(w, ingest_stream_name(st));
    jw_arr_end(w);
    if (f->has_win) {
        jw_key(w, "window");
        jw_obj_begin(w);
        /* byte counts are decimal strings (docs/api.md "Numbers") */
        for (size_t i = 0; i < WIN_SUM_N; i++)
            if (strstr(win_sum[i], "bytes"))
                srv_jw_kv_udec(w, win_sum[i], f->win[i]);
            else
                jw_kv_u64(w, win_sum[i], f->win[i]);
        srv_jw_kv_udec(w, "cap", f->cap);
        if (f->has_dur)
            jw_kv_u64(w, "duration_ms", f->dur_ms);
        jw_obj_end(w);
    }
    jw_obj_end(w);
}

/* Adds a line's window (this stream's counts) to the firing's. */
static void firing_add_window(firing *f, jsonl_doc *d)
{
    uint32_t o = jsonl_doc_find(d, "window"), t;
    uint64_t v;
    if (o == JSONL_NOTFOUND || jsonl_tok_type(d, o) != JSONL_OBJECT)
        return;
    f->has_win = 1;
    for (size_t i = 0; i < WIN_SUM_N; i++)
        if (jsonl_tok_u64(d, jsonl_obj_find(d, o, win_sum[i]), &v) == 0)
            f->win[i] += v;
    if (jsonl_tok_u64(d, jsonl_obj_find(d, o, "cap"), &v) == 0)
        f->cap = v;
    t = jsonl_obj_find(d, o, "duration_ms");
    if (t != JSONL_NOTFOUND && jsonl_tok_u64(d, t, &v) == 0) {
        f->dur_ms = v;
        f->has_dur = 1;
    }
}

int sq_triggers_json(sdb *db, int64_t sess, jw *w)
{
    /* the literal type lets both databases use the partial index */
    static const char sql[] = "SELECT st, ts, body FROM lines WHERE sess=?"
                              " AND type=20 ORDER BY ts, st";
    jsonl_tok tok[TRG_TOKENS], tok0[TRG_TOKENS];
    jsonl_doc d, first;
    sdb_stmt *st = NULL;
    firing f;
    char kind[TRG_KIND_MAX];
    /* the first line of the firing being gathered, kept for its members */
    char body0[TRG_BODY_MAX];
    uint32_t n = 0;
    int rc, cut = 0;

    _Static_assert(EV_TRIGGER == 20, "the query spells it");
    memset(&f, 0, sizeof f);
    jsonl_doc_init(&d, tok, TRG_TOKENS);
    jsonl_doc_init(&first, tok0, TRG_TOKENS);
    rc = sdb_prepare(db, sql, &st);
    if (rc)
        return sq_err(rc);
    qbind_i64(st, 1, sess);
    jw_key(w, "triggers");
    jw_arr_begin(w);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        int64_t s = qcol_i64(st, 0), ts = qcol_i64(st, 1);
        const char *body = qcol_null(st, 2) ? NULL : qcol_text(st, 2);
        if (parse(&d, body, kind))
            continue;
        if (!f.open || ts != f.ts || strcmp(kind, f.kind)) {
            if (f.open)
                firing_end(w, &f, &first);
            if (n == TRG_LIST_MAX) {
                cut = 1;
                f.open = 0;
                break;
            }
            memset(&f, 0, sizeof f);
            f.open = 1;
            f.ts = ts;
            memcpy(f.kind, kind, sizeof kind);
            n++;
            /* the row's text goes with the next step: keep a copy
             * (parse() checked it fits) */
            memcpy(body0, body, strlen(body) + 1);
            parse(&first, body0, kind);
        }
        if (s >= 0 && s < SRV_ST_N)
            f.streams |= 1u << s;
        firing_add_window(&f, &d);
    }
    if (f.open)
        firing_end(w, &f, &first);
    jw_arr_end(w);
    jw_key(w, "triggers_cut");
    jw_bool(w, cut);
    sdb_finalize(st);
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}
