/*
 * reader.c - reads one session: its three streams merged by time, with the
 * dictionary, the session header and the recent scope instances kept
 * current, per docs/events.md section 4.
 *
 * Why merge: a device event names its scope instance (`scope`), whose
 * scope_begin is in the scope stream.  Reading the streams side by side,
 * always taking the stream whose next line is earliest, means the begin
 * has just been read when its kernels come, so a fixed-size table of recent
 * instances is enough and memory does not grow with the session.  Within a
 * stream, lines keep file order (dict lines come before their users even
 * though their ts is later).
 *
 * Tolerance (3.5, 4): bytes after the last '\n' of a file, lines that do
 * not parse, lines longer than RPT_LINE_MAX, lines of an unknown `v` and
 * repeated (sid, st, seq) are skipped and counted; seq gaps are counted.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpufl/gpufl.h"
#include "report_int.h"

typedef struct cursor {
    int st;
    const rpt_files *f;
    size_t fi;
    int open;
    rpt_src src;
    char *buf;
    size_t len, pos, cap; /* cap grows to RPT_CHUNK as files prove long */
    int src_eof, skipping, filled;
    jsonl_doc doc;
    jsonl_tok *tok;
    int have;
    rpt_line ln;
} cursor;

static const struct {
    const char *name;
    rpt_type t;
} type_names[] = {
    { "kernel", RT_KERNEL },       { "scope_begin", RT_SCOPE_BEGIN },
    { "scope_end", RT_SCOPE_END }, { "memcpy", RT_MEMCPY },
    { "memset", RT_MEMSET },       { "sync", RT_SYNC },
    { "alloc", RT_ALLOC },         { "free", RT_FREE },
    { "dict", RT_DICT },           { "gpu", RT_GPU },
    { "host", RT_HOST },           { "marker", RT_MARKER },
    { "counter", RT_COUNTER },     { "sass", RT_SASS },
    { "pcsamp", RT_PCSAMP },       { "loss", RT_LOSS },
    { "session", RT_SESSION },     { "session_end", RT_SESSION_END },
};

uint64_t rpt_u64(jsonl_doc *d, const char *key, uint64_t dflt)
{
    uint64_t v;
    return jsonl_tok_u64(d, jsonl_doc_find(d, key), &v) ? dflt : v;
}

int64_t rpt_i64(jsonl_doc *d, const char *key, int64_t dflt)
{
    int64_t v;
    return jsonl_tok_i64(d, jsonl_doc_find(d, key), &v) ? dflt : v;
}

double rpt_f64(jsonl_doc *d, const char *key, double dflt)
{
    double v;
    return jsonl_tok_f64(d, jsonl_doc_find(d, key), &v) ? dflt : v;
}

uint64_t rpt_tu64(jsonl_doc *d, uint32_t t, uint64_t dflt)
{
    uint64_t v;
    return jsonl_tok_u64(d, t, &v) ? dflt : v;
}

/* Fills f[] from one walk over the top-level members: a switch on the
 * key's length and first byte, then a fixed-size compare.  This is the
 * hot path of every line; one jsonl_doc_find() per field costs twice as
 * much.  Escaped keys (gpufl never writes them) take the slow path. */
static void line_fields(const jsonl_doc *d, uint32_t *f)
{
    uint32_t k = 1;
    for (int i = 0; i < RF_N; i++)
        f[i] = JSONL_NOTFOUND;
    if (!d->n || d->tok[0].type != JSONL_OBJECT)
        return;
    for (uint32_t m = 0; m < d->tok[0].n; m++) {
        const jsonl_tok *kt = &d->tok[k];
        const char *p = d->line + kt->off;
        uint32_t v = k + 1;
        int which = -1;
#define IS(s) (!memcmp(p, s, sizeof s - 1))
        if (kt->flags & JSONL_F_ESC) {
            static const char *const names[RF_N] = { "v",    "seq",   "ts",
                                                     "type", "dev",   "stream",
                                                     "cfg",  "dur",   "grid",
                                                     "api",  "scope", "path" };
            for (int i = 0; i < RF_N && which < 0; i++)
                if (jsonl_tok_streq(d, k, names[i], strlen(names[i])))
                    which = i;
        } else {
            switch (kt->len) {
            case 1: which = p[0] == 'v' ? RF_V : -1; break;
            case 2: which = IS("ts") ? RF_TS : -1; break;
            case 3:
                which = IS("seq")   ? RF_SEQ
                        : IS("dev") ? RF_DEV
                        : IS("cfg") ? RF_CFG
                        : IS("dur") ? RF_DUR
                        : IS("api") ? RF_API
                                    : -1;
                break;
            case 4:
                which = IS("type")   ? RF_TYPE
                        : IS("grid") ? RF_GRID
                        : IS("path") ? RF_PATH
                                     : -1;
                break;
            case 5: which = IS("scope") ? RF_SCOPE : -1; break;
            case 6: which = IS("stream") ? RF_STREAM : -1; break;
            default: break;
            }
        }
#undef IS
        if (which >= 0 && f[which] == JSONL_NOTFOUND)
            f[which] = v;
        k = d->tok[v].next;
    }
}

int rpt_has(jsonl_doc *d, const char *key)
{
    return jsonl_doc_find(d, key) != JSONL_NOTFOUND;
}

void rpt_str(jsonl_doc *d, const char *key, char *buf, size_t cap)
{
    size_t n;
    uint32_t t = jsonl_doc_find(d, key);
    if (t == JSONL_NOTFOUND || jsonl_tok_str(d, t, buf, cap, &n)) {
        buf[0] = 0;
        /* too long: keep what fits, raw, rather than nothing */
        if (t != JSONL_NOTFOUND && jsonl_tok_type(d, t) == JSONL_STRING) {
            n = d->tok[t].len < cap - 1 ? d->tok[t].len : cap - 1;
            memcpy(buf, d->line + d->tok[t].off, n);
            buf[n] = 0;
        }
    }
}

int rpt_dims(jsonl_doc *d, uint32_t t, uint32_t out[3])
{
    uint32_t e;
    out[0] = out[1] = out[2] = 1;
    if (jsonl_tok_type(d, t) != JSONL_ARRAY || d->tok[t].n < 1 ||
        d->tok[t].n > 3)
        return -1;
    e = t + 1;
    for (uint32_t i = 0; i < d->tok[t].n; i++) {
        uint64_t v;
        if (jsonl_tok_u64(d, e, &v) || v > UINT32_MAX)
            return -1;
        out[i] = (uint32_t)v;
        e = d->tok[e].next;
    }
    return 0;
}

const char *rpt_name(const rpt_ctx *c, uint32_t id, size_t *len)
{
    const rpt_dict *e = rpt_dict_get(c, id, DK_NAME);
    if (!e) {
        *len = 0;
        return "";
    }
    *len = e->len;
    return c->arena + e->name - 1;
}

const rpt_dict *rpt_dict_get(const rpt_ctx *c, uint32_t id, int kind)
{
    if (!id || id >= c->ndict || c->dict[id].kind != kind)
        return NULL;
    return &c->dict[id];
}

char *rpt_path_str(const rpt_ctx *c, uint32_t id, char *buf, size_t cap)
{
    uint32_t chain[256];
    size_t n = 0, off = 0;
    buf[0] = 0;
    while (id && n < 256) {
        const rpt_dict *p = rpt_dict_get(c, id, DK_PATH);
        if (!p)
            break;
        chain[n++] = id;
        id = p->parent;
    }
    if (!n) {
        snprintf(buf, cap, "(unknown)");
        return buf;
    }
    while (n-- && off + 1 < cap) {
        size_t len;
        const char *s = rpt_name(c, c->dict[chain[n]].name, &len);
        int w = snprintf(buf + off, cap - off, "%s%.*s", off ? "/" : "",
                         (int)len, s);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    if (off >= cap)
        buf[cap - 1] = 0;
    return buf;
}

const rpt_inst *rpt_inst_get(const rpt_ctx *c, uint64_t id)
{
    const rpt_inst *i;
    if (!c->inst)
        return NULL;
    i = &c->inst[id & (RPT_INST_SLOTS - 1)];
    return id && i->id == id ? i : NULL;
}

int rpt_ctx_init(rpt_ctx *c)
{
    /* inst (1 MiB) comes with the first scope line: a session without
     * scopes, or a small one, does not pay for it */
    memset(c, 0, sizeof *c);
    return GPUFL_OK;
}

void rpt_ctx_release(rpt_ctx *c)
{
    free(c->dict);
    free(c->arena);
    free(c->inst);
    memset(c, 0, sizeof *c);
}

static int dict_slot(rpt_ctx *c, uint64_t id)
{
    if (!id || id >= RPT_MAX_IDS)
        return -1;
    if (id >= c->ndict) {
        uint32_t n = c->ndict ? c->ndict : 1024;
        rpt_dict *nd;
        while (n <= id)
            n *= 2;
        nd = realloc(c->dict, n * sizeof *nd);
        if (!nd)
            return -1;
        memset(nd + c->ndict, 0, (n - c->ndict) * sizeof *nd);
        c->dict = nd;
        c->ndict = n;
    }
    return 0;
}

/* Stores a dict line.  An id keeps its first definition: the format says
 * every definition of an id is the same within a session. */
static void dict_add(rpt_ctx *c, jsonl_doc *d)
{
    uint64_t id = rpt_u64(d, "id", 0);
    uint32_t kt = jsonl_doc_find(d, "kind");
    rpt_dict *e;
    if (dict_slot(c, id) || c->dict[id].kind)
        return;
    e = &c->dict[id];
    if (jsonl_tok_streq(d, kt, "name", 4)) {
        uint32_t t = jsonl_doc_find(d, "name");
        size_t need, n;
        if (jsonl_tok_type(d, t) != JSONL_STRING)
            return;
        need = d->tok[t].len + 1; /* decoding never grows a string */
        if (c->arena_len + need > c->arena_cap) {
            size_t nc = c->arena_cap ? c->arena_cap * 2 : 65536;
            char *na;
            while (nc < c->arena_len + need)
                nc *= 2;
            if (nc > RPT_ARENA_MAX)
                return;
            na = realloc(c->arena, nc);
            if (!na)
                return;
            c->arena = na;
            c->arena_cap = nc;
        }
        if (jsonl_tok_str(d, t, c->arena + c->arena_len, need, &n))
            return;
        e->kind = DK_NAME;
        e->name = (uint32_t)c->arena_len + 1;
        e->len = (uint32_t)n;
        c->arena_len += n + 1;
    } else if (jsonl_tok_streq(d, kt, "path", 4)) {
        e->kind = DK_PATH;
        e->parent = (uint32_t)rpt_u64(d, "parent", 0);
        e->name = (uint32_t)rpt_u64(d, "name", 0);
        e->depth = (uint16_t)rpt_u64(d, "depth", 0);
    } else if (jsonl_tok_streq(d, kt, "launch", 6)) {
        double occ = rpt_f64(d, "occ", -1);
        e->kind = DK_LAUNCH;
        e->name = (uint32_t)rpt_u64(d, "name", 0);
        rpt_dims(d, jsonl_doc_find(d, "block"), e->block);
        e->regs = (uint32_t)rpt_u64(d, "regs", 0);
        e->smem = (uint32_t)rpt_u64(d, "smem", 0);
        e->dsmem = (uint32_t)rpt_u64(d, "dsmem", 0);
        e->lmem = (uint32_t)rpt_u64(d, "lmem", 0);
        e->has_occ = occ > 0;
        e->occ = (float)occ;
        rpt_str(d, "lim", e->lim, sizeof e->lim);
    } else if (jsonl_tok_streq(d, kt, "stack", 5)) {
        e->kind = DK_STACK;
    }
}

static void header_read(rpt_ctx *c, jsonl_doc *d)
{
    rpt_header *h = &c->hdr;
    uint32_t t, e;
    int b = 0;
    if (h->have)
        return;
    h->have = 1;
    rpt_str(d, "sid", h->sid, sizeof h->sid);
    rpt_str(d, "app", h->app, sizeof h->app);
    rpt_str(d, "host", h->host, sizeof h->host);
    rpt_str(d, "lib", h->lib, sizeof h->lib);
    rpt_str(d, "cmd", h->cmd, sizeof h->cmd);
    rpt_str(d, "warning", h->warning, sizeof h->warning);
    h->pid = rpt_u64(d, "pid", 0);
    h->start = rpt_u64(d, "start", 0);
    h->interval_ms = rpt_u64(d, "interval_ms", 0);
    jsonl_tok_bool(d, jsonl_doc_find(d, "simulated"), &b);
    h->simulated = b;
    t = jsonl_doc_find(d, "engines");
    if (jsonl_tok_type(d, t) == JSONL_OBJECT &&
        d->tok[t].len < sizeof h->engines) {
        memcpy(h->engines, d->line + d->tok[t].off, d->tok[t].len);
        h->engines[d->tok[t].len] = 0;
    } else {
        snprintf(h->engines, sizeof h->engines, "{}");
    }
    t = jsonl_doc_find(d, "devices");
    if (jsonl_tok_type(d, t) != JSONL_ARRAY)
        return;
    e = t + 1;
    for (uint32_t i = 0; i < d->tok[t].n; i++, e = d->tok[e].next) {
        uint64_t id, v;
        rpt_devinfo *dv;
        uint32_t f;
        size_t n;
        if (jsonl_tok_u64(d, jsonl_obj_find(d, e, "id"), &id) ||
            id >= RPT_MAX_DEV)
            continue;
        dv = &h->dev[id];
        dv->present = 1;
        if (id + 1 > h->ndev)
            h->ndev = (uint32_t)id + 1;
        if (jsonl_tok_str(d, jsonl_obj_find(d, e, "name"), dv->name,
                          sizeof dv->name, &n))
            dv->name[0] = 0;
        if (jsonl_tok_str(d, jsonl_obj_find(d, e, "cc"), dv->cc, sizeof dv->cc,
                          &n))
            dv->cc[0] = 0;
        b = 0;
        jsonl_tok_bool(d, jsonl_obj_find(d, e, "simulated"), &b);
        dv->simulated = b;
#define DEVF(field, key)                                                       \
    f = jsonl_obj_find(d, e, key);                                             \
    if (!jsonl_tok_u64(d, f, &v))                                              \
        dv->field = v;
        DEVF(sms, "sms");
        DEVF(mem, "mem");
        DEVF(power_limit, "power_limit");
        DEVF(regs_sm, "regs_sm");
        DEVF(smem_sm, "smem_sm");
        DEVF(max_threads_sm, "max_threads_sm");
        DEVF(max_blocks_sm, "max_blocks_sm");
        DEVF(max_sm_clock, "max_sm_clock");
#undef DEVF
    }
}

static rpt_type line_type(jsonl_doc *d, uint32_t t)
{
    if (jsonl_tok_type(d, t) != JSONL_STRING)
        return RT_UNKNOWN;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (jsonl_tok_streq(d, t, type_names[i].name,
                            strlen(type_names[i].name)))
            return type_names[i].t;
    return RT_UNKNOWN;
}

/* Moves to the next file of the cursor's stream; 0 when there is none. */
static int cur_next_file(rpt_ctx *c, cursor *k)
{
    if (k->open) {
        rpt_src_close(&k->src);
        k->open = 0;
    }
    while (k->fi < k->f->n[k->st]) {
        const char *p = k->f->path[k->st][k->fi++];
        if (rpt_src_open(&k->src, p) == GPUFL_OK) {
            k->open = 1;
            k->len = k->pos = 0;
            k->src_eof = 0;
            k->skipping = 0;
            c->st[k->st].files++;
            return 1;
        }
        /* a rotated file pruned since the scan is ordinary in a live
         * folder; anything else (a link swapped in, EACCES) is said - its
         * lines then show as a gap in the stream's seq */
        if (errno != ENOENT)
            fprintf(stderr,
                    "gpufl: cannot read %s: %s; its lines are missing from "
                    "this session\n",
                    p,
                    errno == EINVAL ? "not a regular file" : strerror(errno));
    }
    return 0;
}

/* Loads the next usable line of the stream into k->ln; k->have = 0 at the
 * end of the stream. */
static void cur_advance(rpt_ctx *c, cursor *k)
{
    rpt_stats *s = &c->st[k->st];
    k->have = 0;
    for (;;) {
        const char *line;
        size_t n;
        if (!k->open && !cur_next_file(c, k))
            return;
        if (!jsonl_line_next(k->buf, k->len, &k->pos, &line, &n)) {
            long got;
            if (k->pos) { /* keep the partial line, refill behind it */
                memmove(k->buf, k->buf + k->pos, k->len - k->pos);
                k->len -= k->pos;
                k->pos = 0;
            }
            if ((k->len == k->cap || k->filled) && k->cap < RPT_CHUNK) {
                /* a long line, or a long file whose last read filled the
                 * buffer: read more at a time */
                char *g = realloc(k->buf, k->cap * 4);
                if (g) {
                    k->buf = g;
                    k->cap *= 4;
                }
            }
            if (k->len == k->cap) { /* a line longer than the buffer */
                k->len = 0;
                if (!k->skipping)
                    s->long_lines++;
                k->skipping = 1;
            }
            got = k->src_eof
                      ? 0
                      : rpt_src_read(&k->src, k->buf + k->len, k->cap - k->len);
            k->filled = got > 0 && (size_t)got == k->cap - k->len;
            if (got <= 0) {
                if (got < 0)
                    s->damaged++;
                if (k->len > k->pos && !k->skipping)
                    s->partial++; /* bytes after the last '\n' */
                k->open = 0;
                rpt_src_close(&k->src);
                continue;
            }
            k->len += (size_t)got;
            continue;
        }
        if (k->skipping) { /* the end of an over-long line */
            k->skipping = 0;
            continue;
        }
        if (!n)
            continue;
        if (n > RPT_LINE_MAX) {
            s->long_lines++;
            continue;
        }
        if (jsonl_doc_parse_obj(&k->doc, line, n)) {
            s->damaged++;
            continue;
        }
        line_fields(&k->doc, k->ln.f);
        if (rpt_tu64(&k->doc, k->ln.f[RF_V], 0) != 1) {
            s->badv++;
            continue;
        }
        k->ln.seq = rpt_tu64(&k->doc, k->ln.f[RF_SEQ], 0);
        k->ln.ts = rpt_tu64(&k->doc, k->ln.f[RF_TS], 0);
        k->ln.type = line_type(&k->doc, k->ln.f[RF_TYPE]);
        if (s->seen && k->ln.seq <= s->last_seq) {
            s->dups++;
            continue;
        }
        if (s->seen && k->ln.seq > s->last_seq + 1)
            s->gaps += k->ln.seq - s->last_seq - 1;
        s->seen = 1;
        s->last_seq = k->ln.seq;
        s->lines++;
        k->have = 1;
        return;
    }
}

int rpt_session_read(rpt_ctx *c, const rpt_files *f, rpt_visit_fn fn, void *ud,
                     char *err, size_t errlen)
{
    cursor k[RPT_NST];
    int rc = GPUFL_OK;
    memset(k, 0, sizeof k);
    for (int s = 0; s < RPT_NST; s++) {
        k[s].st = s;
        k[s].f = f;
        k[s].src.fd = -1;
        k[s].ln.st = s;
        k[s].ln.d = &k[s].doc;
        k[s].cap = RPT_CHUNK >> 6; /* 64 KiB, x4 while full, to 4 MiB */
        k[s].buf = malloc(k[s].cap);
        k[s].tok = malloc(RPT_TOKENS * sizeof *k[s].tok);
        if (!k[s].buf || !k[s].tok) {
            snprintf(err, errlen, "out of memory");
            rc = GPUFL_ENOMEM;
            goto out;
        }
        jsonl_doc_init(&k[s].doc, k[s].tok, RPT_TOKENS);
        cur_advance(c, &k[s]);
    }
    for (;;) {
        cursor *m = NULL;
        jsonl_doc *d;
        for (int s = 0; s < RPT_NST; s++)
            if (k[s].have && (!m || k[s].ln.ts < m->ln.ts))
                m = &k[s];
        if (!m)
            break;
        d = m->ln.d;
        switch (m->ln.type) {
        case RT_DICT: dict_add(c, d); break;
        case RT_SESSION: header_read(c, d); break;
        case RT_SESSION_END: {
            rpt_stats *s = &c->st[m->st];
            s->ended = 1;
            s->end_lines = rpt_u64(d, "lines", 0);
            s->end_lost = rpt_u64(d, "lost", 0);
            s->end_rotations = rpt_u64(d, "rotations", 0);
            s->end_dur = rpt_u64(d, "dur", 0);
            break;
        }
        case RT_SCOPE_BEGIN:
        case RT_SCOPE_END: {
            uint64_t id = rpt_u64(d, "id", 0);
            rpt_inst *i;
            if (!c->inst && !c->inst_failed) {
                c->inst = calloc(RPT_INST_SLOTS, sizeof *c->inst);
                c->inst_failed = !c->inst; /* paths then read as unknown */
            }
            if (!c->inst)
                break;
            i = &c->inst[id & (RPT_INST_SLOTS - 1)];
            if (id) {
                i->id = id;
                i->path = (uint32_t)rpt_u64(d, "path", 0);
                i->tid = (uint32_t)rpt_u64(d, "tid", 0);
            }
            break;
        }
        default: break;
        }
        if (m->ln.type != RT_DICT && m->ln.type != RT_SESSION &&
            m->ln.type != RT_UNKNOWN) {
            if (!c->first_ts || m->ln.ts < c->first_ts)
                c->first_ts = m->ln.ts;
            if (m->ln.ts > c->last_ts)
                c->last_ts = m->ln.ts;
        }
        if (fn && fn(ud, c, &m->ln))
            break;
        cur_advance(c, m);
    }
out:
    for (int s = 0; s < RPT_NST; s++) {
        if (k[s].open)
            rpt_src_close(&k[s].src);
        free(k[s].buf);
        free(k[s].tok);
    }
    return rc;
}
