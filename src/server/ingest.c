/*
 * ingest.c - validation of event lines (request bodies are decoded by
 * ingest_body.c).
 *
 * Each event type has a declarative field table: which JSON members it
 * reads, their type, where they land in srv_ev and whether they are
 * required.  Unknown members are ignored (newer clients may add fields);
 * a known member of the wrong type rejects the line, so bad data never
 * reaches the store as a silent zero.
 */
#include "ingest.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const srv_sys_fields[SRV_SYS_NFIELDS] = {
    "util",    "mem_util", "mem_used", "mem_total", "temp",      "power",
    "fan",     "clk_sm",   "clk_mem",  "sm_active", "sm_occ",    "pcie_tx",
    "pcie_rx", "energy",   "cpu",      "ram_used",  "ram_total", "swap_used",
    "load1",   "proc_cpu", "proc_rss"
};

static const char *const stream_names[SRV_ST_N] = { "device", "scope",
                                                    "system" };

int ingest_stream_index(const char *name)
{
    for (int i = 0; i < SRV_ST_N; i++)
        if (strcmp(name, stream_names[i]) == 0)
            return i;
    return -1;
}

const char *ingest_stream_name(int st)
{
    return st >= 0 && st < SRV_ST_N ? stream_names[st] : "?";
}

/* ---- field tables ---- */

enum { F_U64, F_I64, F_F64, F_STR, F_XYZ, F_FLAG, F_BOOL, F_OBJ, F_ARR };

typedef struct field {
    const char *key;
    uint8_t kind;
    uint8_t req;
    uint16_t cap; /* F_STR: longest decoded string; F_FLAG: the bit */
    size_t off;
} field;

#define U(k, m)                                                                \
    {                                                                          \
        k, F_U64, 0, 0, offsetof(srv_ev, m)                                    \
    }
#define UR(k, m)                                                               \
    {                                                                          \
        k, F_U64, 1, 0, offsetof(srv_ev, m)                                    \
    }
#define S(k, m, c)                                                             \
    {                                                                          \
        k, F_STR, 0, c, offsetof(srv_ev, m)                                    \
    }
#define SR(k, m, c)                                                            \
    {                                                                          \
        k, F_STR, 1, c, offsetof(srv_ev, m)                                    \
    }
#define FL(k, bit)                                                             \
    {                                                                          \
        k, F_FLAG, 0, bit, 0                                                   \
    }
#define END                                                                    \
    {                                                                          \
        NULL, 0, 0, 0, 0                                                       \
    }

static const field f_session[] = { SR("app", app, 256),
                                   SR("host", host, 256),
                                   U("pid", pid),
                                   U("start", start),
                                   S("lib", text, 64),
                                   { "simulated", F_BOOL, 0, 0, 0 },
                                   S("job", job, INGEST_JOB_MAX),
                                   S("job_source", job_source, 64),
                                   S("step_scope", step_scope, INGEST_JOB_MAX),
                                   S("sim_perturb", sim_perturb, 1024),
                                   END };
static const field f_session_end[] = { S("reason", reason, 64), U("dur", dur),
                                       U("lines", lines), U("lost", lost),
                                       END };
static const field f_loss[] = { S("reason", reason, 64), U("count", count),
                                U("tid", tid), END };
static const field f_kernel[] = {
    U("dev", dev),
    U("stream", stream),
    U("corr", corr),
    U("cfg", cfg),
    U("name", name),
    { "grid", F_XYZ, 0, 0, offsetof(srv_ev, grid) },
    { "block", F_XYZ, 0, 0, offsetof(srv_ev, block) },
    U("regs", regs),
    U("smem", smem),
    U("dsmem", dsmem),
    U("lmem", lmem),
    UR("dur", dur),
    { "occ", F_F64, 0, 0, offsetof(srv_ev, occ) },
    S("lim", lim, 64),
    U("scope", scope),
    U("path", path),
    U("stack", stack),
    FL("coop", EVF_COOP),
    U("tid", tid),
    END
};
static const field f_copy[] = {
    U("dev", dev),          U("dst_dev", parent),
    U("stream", stream),    U("corr", corr),
    S("kind", kind, 32),    U("bytes", bytes),
    U("dur", dur),          U("scope", scope),
    U("path", path),        U("stack", stack),
    FL("async", EVF_ASYNC), FL("pinned", EVF_PINNED),
    U("tid", tid),          { "value", F_I64, 0, 0, offsetof(srv_ev, value) },
    S("addr", text, 40),    END
};
static const field f_scope[] = { UR("id", id),
                                 UR("name", name),
                                 UR("path", path),
                                 U("parent", parent),
                                 U("depth", depth),
                                 U("tid", tid),
                                 U("dur", dur),
                                 FL("unclosed", EVF_UNCLOSED),
                                 END };
static const field f_marker[] = { S("text", text, 4096), U("tid", tid),
                                  U("scope", scope), END };
static const field f_counter[] = {
    UR("name", name), { "value", F_I64, 0, 0, offsetof(srv_ev, value) }, END
};
static const field f_sass[] = { U("dev", dev),
                                UR("func", func),
                                U("file", file),
                                U("line", srcline),
                                UR("pc", pc),
                                U("inst", inst),
                                U("thread_inst", thread_inst),
                                U("sectors", sectors),
                                U("sectors_ideal", sectors_ideal),
                                U("scope", scope),
                                U("path", path),
                                U("samples", samples),
                                END };
static const field f_gpu[] = { UR("dev", dev), END };
static const field f_host[] = { END };
/* gpufl idle (docs/events.md "verdict"); more checks in verdict_check() */
static const field f_verdict[] = {
    SR("kind", kind, 16),    SR("state", reason, 32), U("dev", dev),
    S("session", text, 128), U("since", start),       END
};
/* gpufl idle's GPU time per owner; checked by srv_waste_parse */
static const field f_waste[] = { U("dev", dev), END };
/* libgpufl's ring mode: what made it write a dump (docs/events.md) */
static const field f_trigger[] = { SR("trigger", kind, 32),
                                   S("detail", text, 256), U("dump", id), END };
static const field f_dict[] = { UR("id", id), END };
static const field f_dict_name[] = { SR("name", dname, INGEST_NAME_MAX),
                                     S("demangled", demangled, INGEST_NAME_MAX),
                                     END };
static const field f_dict_path[] = { U("parent", parent), UR("name", name),
                                     U("depth", depth), END };
static const field f_dict_launch[] = {
    UR("name", name),
    { "block", F_XYZ, 0, 0, offsetof(srv_ev, block) },
    U("regs", regs),
    U("smem", smem),
    U("dsmem", dsmem),
    U("lmem", lmem),
    { "occ", F_F64, 0, 0, offsetof(srv_ev, occ) },
    S("lim", lim, 64),
    END
};

typedef struct type_def {
    const char *name;
    uint8_t len; /* strlen(name): the type is looked up on every line */
    uint8_t type;
    uint8_t streams; /* bit per stream */
    const field *fields;
} type_def;

#define SD (1u << SRV_ST_DEVICE)
#define SS (1u << SRV_ST_SCOPE)
#define SY (1u << SRV_ST_SYSTEM)

#define TN(s) s, sizeof(s) - 1 /* a type's name and its length */

/* Looked up in this order, one name compare each: the kernels, by far
 * the most lines, first (fifth, they cost four compares more a line). */
static const type_def types[] = {
    { TN("kernel"), EV_KERNEL, SD, f_kernel },
    { TN("session"), EV_SESSION, SD | SS | SY, f_session },
    { TN("session_end"), EV_SESSION_END, SD | SS | SY, f_session_end },
    { TN("dict"), EV_DICT, SD | SS | SY, f_dict },
    { TN("loss"), EV_LOSS, SD | SS | SY, f_loss },
    { TN("memcpy"), EV_MEMCPY, SD, f_copy },
    { TN("memset"), EV_MEMSET, SD, f_copy },
    { TN("sync"), EV_SYNC, SD, f_copy },
    { TN("alloc"), EV_ALLOC, SD, f_copy },
    { TN("free"), EV_FREE, SD, f_copy },
    { TN("scope_begin"), EV_SCOPE_BEGIN, SS, f_scope },
    { TN("scope_end"), EV_SCOPE_END, SS, f_scope },
    { TN("marker"), EV_MARKER, SS, f_marker },
    { TN("counter"), EV_COUNTER, SS, f_counter },
    { TN("sass"), EV_SASS, SS, f_sass },
    { TN("pcsamp"), EV_PCSAMP, SS, f_sass },
    { TN("gpu"), EV_GPU, SY, f_gpu },
    { TN("host"), EV_HOST, SY, f_host },
    { TN("verdict"), EV_VERDICT, SY, f_verdict },
    { TN("trigger"), EV_TRIGGER, SD | SS | SY, f_trigger },
    { TN("waste"), EV_WASTE, SY, f_waste },
};

/* ---- helpers ---- */

/* reason = pre + arg + post (messages are fixed text around one name) */
static int fail3(char *reason, const char *pre, const char *arg,
                 const char *post)
{
    snprintf(reason, INGEST_REASON_MAX, "%s%s%s", pre, arg, post);
    return GPUFL_EPARSE;
}

static int str_get(jsonl_doc *d, uint32_t t, ingest_arena *a, size_t cap,
                   srv_str *out)
{
    size_t n = 0, room = a->cap - a->len;
    int rc;

    if (jsonl_tok_type(d, t) != JSONL_STRING)
        return GPUFL_EPARSE;
    if (room > cap + 1)
        room = cap + 1;
    rc = jsonl_tok_str(d, t, a->buf + a->len, room, &n);
    if (rc)
        return rc;
    out->p = a->buf + a->len;
    out->n = n;
    a->len += n + 1;
    return GPUFL_OK;
}

/* [x], [x,y] or [x,y,z]; missing trailing dimensions are 1. */
static int xyz_get(jsonl_doc *d, uint32_t t, uint64_t *v)
{
    uint32_t k;

    if (jsonl_tok_type(d, t) != JSONL_ARRAY || d->tok[t].n < 1 ||
        d->tok[t].n > 3)
        return GPUFL_EPARSE;
    v[0] = v[1] = v[2] = 1;
    k = t + 1;
    for (uint32_t i = 0; i < d->tok[t].n; i++) {
        if (jsonl_tok_u64(d, k, &v[i]))
            return GPUFL_EPARSE;
        k = d->tok[k].next;
    }
    return GPUFL_OK;
}

/* Each field table's keys as a jsonl_keyset (ks_of), made once: a line's
 * fields are then found in one pass over its keys, not one scan per field
 * (that scan and the keys' strlen were ~8% of the server's CPU per
 * kernel, docs/server.md "Where ingest's CPU goes"). */
#define NTYPES (sizeof(types) / sizeof(types[0]))
static jsonl_keyset ks_types[NTYPES], ks_dicts[4], ks_env;
/* the envelope's members, in ks_env's order */
/* "api" (kernels and copies, api_get) is looked up with the envelope: a
 * search of its own walked the line's keys again (~200 instructions a
 * line) */
enum { ENV_V, ENV_SID, ENV_ST, ENV_SEQ, ENV_TS, ENV_TYPE, ENV_API, ENV_N };
static pthread_once_t ks_once = PTHREAD_ONCE_INIT;
static int ks_err;

static void ks_make(jsonl_keyset *ks, const field *f)
{
    const char *keys[JSONL_SET_MAX];
    size_t n = 0;

    for (; f && f->key; f++)
        if (n < JSONL_SET_MAX)
            keys[n++] = f->key;
        else
            ks_err = 1;
    if (jsonl_keyset_init(ks, keys, n))
        ks_err = 1;
}

static void ks_init(void)
{
    static const field *const kf[4] = { f_dict_name, f_dict_path, NULL,
                                        f_dict_launch };
    static const char *const env[ENV_N] = { "v",  "sid",  "st", "seq",
                                            "ts", "type", "api" };

    for (size_t i = 0; i < NTYPES; i++)
        ks_make(&ks_types[i], types[i].fields);
    for (int k = 0; k < 4; k++)
        ks_make(&ks_dicts[k], kf[k]);
    if (jsonl_keyset_init(&ks_env, env, ENV_N))
        ks_err = 1;
}

static int fields_get(jsonl_doc *d, const field *f, const jsonl_keyset *ks,
                      ingest_arena *a, srv_ev *ev, char *reason)
{
    uint32_t at[JSONL_SET_MAX];

    jsonl_doc_findset(d, ks, at);
    for (uint32_t j = 0; f->key; f++, j++) {
        uint32_t t = at[j];
        char *base = (char *)ev + f->off;
        int rc = GPUFL_OK, b = 0;

        if (t == JSONL_NOTFOUND) {
            if (f->req)
                return fail3(reason, "missing field \"", f->key, "\"");
            continue;
        }
        switch (f->kind) {
        case F_U64: rc = jsonl_tok_u64(d, t, (uint64_t *)(void *)base); break;
        case F_I64: rc = jsonl_tok_i64(d, t, (int64_t *)(void *)base); break;
        case F_F64: rc = jsonl_tok_f64(d, t, (double *)(void *)base); break;
        case F_STR:
            rc = str_get(d, t, a, f->cap, (srv_str *)(void *)base);
            break;
        case F_XYZ: rc = xyz_get(d, t, (uint64_t *)(void *)base); break;
        case F_FLAG:
            if (jsonl_tok_u64(d, t, &(uint64_t){ 0 }))
                rc = GPUFL_EPARSE;
            else
                ev->flags |= f->cap;
            break;
        case F_BOOL:
            rc = jsonl_tok_bool(d, t, &b);
            ev->simulated = (uint8_t)b;
            break;
        default: rc = GPUFL_EINTERNAL;
        }
        if (rc == GPUFL_ETOOBIG)
            return fail3(reason, "field \"", f->key, "\": value too large"),
                   GPUFL_ETOOBIG;
        if (rc)
            return fail3(reason, "field \"", f->key, "\": wrong type or form");
    }
    return GPUFL_OK;
}

#define B8(c) (0x0101010101010101ull * (uint64_t)(c))

/* The high bit of each byte of x that is not a lower-case hex digit.  On
 * 7-bit values y, y + (0x80 - c) sets a byte's high bit exactly when
 * y >= c, and never carries into the next byte; bytes from 0x80 up are
 * flagged as they are. */
static uint64_t nonhex8(uint64_t x)
{
    uint64_t y = x & ~B8(0x80);
    uint64_t dig = (y + B8(0x80 - '0')) & ~(y + B8(0x80 - '9' - 1));
    uint64_t low = (y + B8(0x80 - 'a')) & ~(y + B8(0x80 - 'f' - 1));

    return (~(dig | low) | x) & B8(0x80);
}

static uint64_t word8(const void *p)
{
    uint64_t w;

    memcpy(&w, p, sizeof(w));
    return w;
}

/* Per line of every batch: a byte loop over the 36 characters was ~4 %
 * of ingest_line_parse's instructions.  The dashes are compared, then the
 * id is read as five (overlapping) words straight from the line and
 * every byte but the dashes tested at once.  (Copying the 32 digits to a
 * buffer first and reading it back as words cost as much as the loop:
 * each load spans several smaller stores, which the CPU cannot forward.)
 * The dashes' bytes in the words at 8 and 16 are masked by byte arrays,
 * so the test holds in either byte order. */
int ingest_is_uuid(const char *s, size_t n)
{
    static const unsigned char d8[8] = { 0x80, 0, 0, 0, 0, 0x80, 0, 0 };
    static const unsigned char d16[8] = { 0, 0, 0x80, 0, 0, 0, 0, 0x80 };

    if (n != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
        return 0;
    return !(nonhex8(word8(s)) | (nonhex8(word8(s + 8)) & ~word8(d8)) |
             (nonhex8(word8(s + 16)) & ~word8(d16)) | nonhex8(word8(s + 24)) |
             nonhex8(word8(s + 28)));
}

static int sys_get(jsonl_doc *d, srv_ev *ev, char *reason)
{
    for (int i = 0; i < SRV_SYS_NFIELDS; i++) {
        uint32_t t = jsonl_doc_find(d, srv_sys_fields[i]);
        if (t == JSONL_NOTFOUND)
            continue;
        if (jsonl_tok_f64(d, t, &ev->sys[i]))
            return fail3(reason, "field \"", srv_sys_fields[i],
                         "\": not a number");
        ev->sys_set |= 1u << i;
    }
    return GPUFL_OK;
}

static int dict_get(jsonl_doc *d, ingest_arena *a, srv_ev *ev, char *reason)
{
    static const char *const kinds[] = { "name", "path", "stack", "launch" };
    static const field *const kf[] = { f_dict_name, f_dict_path, NULL,
                                       f_dict_launch };
    uint32_t t = jsonl_doc_find(d, "kind");
    int k;

    for (k = 0; k < 4; k++)
        if (jsonl_tok_streq(d, t, kinds[k], strlen(kinds[k])))
            break;
    if (k == 4)
        return fail3(reason, "dict: kind must be name, path, stack or launch",
                     "", "");
    ev->dkind = (uint8_t)k;
    if (ev->id == 0)
        return fail3(reason, "dict: id must be positive", "", "");
    if (k == DK_STACK) {
        t = jsonl_doc_find(d, "frames");
        if (jsonl_tok_type(d, t) != JSONL_ARRAY)
            return fail3(reason, "dict: stack needs a frames array", "", "");
        for (uint32_t i = 0, e = t + 1; i < d->tok[t].n;
             i++, e = d->tok[e].next)
            if (jsonl_tok_type(d, e) != JSONL_STRING)
                return fail3(reason, "dict: frames must be strings", "", "");
        return GPUFL_OK;
    }
    return fields_get(d, kf[k], &ks_dicts[k], a, ev, reason);
}

/* A session's place in its job: rank, world_size, local_rank, each an
 * integer below SRV_JOB_RANK_MAX when present (0 is a rank, so presence is
 * a bit, not a non-zero value); a rank must be below the world size. */
static int job_get(jsonl_doc *d, srv_ev *ev, char *reason)
{
    static const char *const keys[] = { "rank", "world_size", "local_rank" };
    uint32_t *dst[] = { &ev->rank, &ev->world_size, &ev->local_rank };

    for (int i = 0; i < 3; i++) {
        uint32_t t = jsonl_doc_find(d, keys[i]);
        uint64_t v;
        if (t == JSONL_NOTFOUND)
            continue;
        if (jsonl_tok_u64(d, t, &v) || v >= SRV_JOB_RANK_MAX)
            return fail3(reason, "field \"", keys[i],
                         "\": an integer from 0 to 16777215");
        *dst[i] = (uint32_t)v;
        ev->job_set |= (uint8_t)(1u << i);
    }
    if (ev->world_size == 0 && (ev->job_set & SRV_JOB_WORLD))
        return fail3(reason, "field \"world_size\": must be positive", "", "");
    if ((ev->job_set & (SRV_JOB_RANK | SRV_JOB_WORLD)) ==
            (SRV_JOB_RANK | SRV_JOB_WORLD) &&
        ev->rank >= ev->world_size)
        return fail3(reason, "field \"rank\": not below world_size", "", "");
    return GPUFL_OK;
}

/* A verdict names a GPU (dev) or a session, a state of that kind, and
 * carries reasons as strings and signals as an object. */
static int verdict_check(jsonl_doc *d, const srv_ev *ev, char *reason)
{
    static const char *const gpu_states[] = {
        "EMPTY",   "HELD",  "BURSTY",           "BUSY_LOW_OCC", "BUSY",
        "PHANTOM", "STUCK", "ALLOCATED_UNUSED", "UNKNOWN"
    };
    static const char *const sess_states[] = { "STARTING",   "ACTIVE",
                                               "GPU_UNUSED", "HELD_IDLE",
                                               "IDLE",       "MAX_AGE",
                                               "UNKNOWN" };
    int gpu = ev->kind.n == 3 && !memcmp(ev->kind.p, "gpu", 3);
    const char *const *states = gpu ? gpu_states : sess_states;
    size_t nstates = gpu ? sizeof gpu_states / sizeof gpu_states[0]
                         : sizeof sess_states / sizeof sess_states[0];
    uint32_t t;
    int ok = 0;

    if (!gpu && !(ev->kind.n == 7 && !memcmp(ev->kind.p, "session", 7)))
        return fail3(reason, "verdict: kind must be gpu or session", "", "");
    for (size_t i = 0; i < nstates; i++)
        ok |= strlen(states[i]) == ev->reason.n &&
              !memcmp(states[i], ev->reason.p, ev->reason.n);
    if (!ok)
        return fail3(reason, "verdict: unknown state for kind ",
                     gpu ? "gpu" : "session", "");
    if (gpu && jsonl_tok_type(d, jsonl_doc_find(d, "dev")) != JSONL_NUMBER)
        return fail3(reason, "verdict: a gpu verdict needs \"dev\"", "", "");
    if (!gpu && !ev->text.n)
        return fail3(reason, "verdict: a session verdict needs \"session\"", "",
                     "");
    t = jsonl_doc_find(d, "reasons");
    if (t != JSONL_NOTFOUND) {
        if (jsonl_tok_type(d, t) != JSONL_ARRAY || d->tok[t].n > 32)
            return fail3(reason,
                         "verdict: reasons must be an array of at "
                         "most 32 strings",
                         "", "");
        for (uint32_t i = 0, k = t + 1; i < d->tok[t].n;
             i++, k = d->tok[k].next)
            if (jsonl_tok_type(d, k) != JSONL_STRING || d->tok[k].len > 1024)
                return fail3(reason, "verdict: a reason must be a string", "",
                             "");
    }
    t = jsonl_doc_find(d, "signals");
    if (t != JSONL_NOTFOUND && jsonl_tok_type(d, t) != JSONL_OBJECT)
        return fail3(reason, "verdict: signals must be an object", "", "");
    t = jsonl_doc_find(d, "devs");
    if (t != JSONL_NOTFOUND) {
        if (jsonl_tok_type(d, t) != JSONL_ARRAY)
            return fail3(reason, "verdict: devs must be an array", "", "");
        for (uint32_t i = 0, k = t + 1; i < d->tok[t].n;
             i++, k = d->tok[k].next) {
            uint64_t v;
            if (jsonl_tok_u64(d, k, &v))
                return fail3(reason, "verdict: devs holds GPU indices", "", "");
        }
    }
    return GPUFL_OK;
}

static int stalls_check(jsonl_doc *d, char *reason)
{
    uint32_t t = jsonl_doc_find(d, "stalls");

    if (jsonl_tok_type(d, t) != JSONL_OBJECT)
        return fail3(reason, "pcsamp: stalls must be an object", "", "");
    for (uint32_t i = 0, k = t + 1; i < d->tok[t].n; i++) {
        uint64_t v;
        if (d->tok[k].len > 64 || jsonl_tok_u64(d, k + 1, &v))
            return fail3(reason, "pcsamp: bad stall entry", "", "");
        k = d->tok[k + 1].next;
    }
    return GPUFL_OK;
}

/* "streams" of a session line: the streams the session writes, as an
 * array of names (docs/events.md); absent: all three.  It must name the
 * line's own stream. */
static int streams_get(jsonl_doc *d, int st, srv_ev *ev, char *reason)
{
    uint32_t t = jsonl_doc_find(d, "streams");
    unsigned mask = 0;

    if (t == JSONL_NOTFOUND)
        return GPUFL_OK;
    if (jsonl_tok_type(d, t) != JSONL_ARRAY || d->tok[t].n < 1 ||
        d->tok[t].n > SRV_ST_N)
        return fail3(reason,
                     "field \"streams\": an array of 1 to 3 stream "
                     "names",
                     "", "");
    for (uint32_t i = 0, k = t + 1; i < d->tok[t].n; i++, k = d->tok[k].next) {
        int j;
        for (j = 0; j < SRV_ST_N; j++)
            if (jsonl_tok_streq(d, k, stream_names[j], strlen(stream_names[j])))
                break;
        if (j == SRV_ST_N)
            return fail3(reason,
                         "field \"streams\": names are device, scope or "
                         "system",
                         "", "");
        mask |= 1u << j;
    }
    if (!(mask & (1u << st)))
        return fail3(reason, "field \"streams\": must name this stream (",
                     stream_names[st], ")");
    ev->streams = (uint8_t)mask;
    return GPUFL_OK;
}

/* "api": [API call entry relative to ts, API duration] of a kernel, copy
 * or memset.  The call is a time span like the operation itself: its
 * entry and exit must be times (0 .. 2^63-1 ns), so the queries' sums
 * (ts + offset + duration) never wrap. */
static int api_get(jsonl_doc *d, uint32_t t, srv_ev *ev, char *reason)
{
    uint64_t enter;

    if (t == JSONL_NOTFOUND)
        return GPUFL_OK;
    if (jsonl_tok_type(d, t) != JSONL_ARRAY || d->tok[t].n != 2 ||
        jsonl_tok_i64(d, t + 1, &ev->api_off) ||
        jsonl_tok_u64(d, d->tok[t + 1].next, &ev->api_dur) ||
        ev->api_dur > (uint64_t)INT64_MAX)
        return fail3(reason, "field \"api\": must be [offset, duration]", "",
                     "");
    enter = ev->ts + (uint64_t)ev->api_off;
    if ((ev->api_off < 0 && (uint64_t)0 - (uint64_t)ev->api_off > ev->ts) ||
        (ev->api_off > 0 &&
         (uint64_t)ev->api_off > (uint64_t)INT64_MAX - ev->ts) ||
        ev->api_dur > (uint64_t)INT64_MAX - enter)
        return fail3(reason,
                     "field \"api\": the call's entry and exit must lie in "
                     "0 .. 2^63-1 ns",
                     "", "");
    return GPUFL_OK;
}

int ingest_line_parse(jsonl_doc *d, int st, const char *line, size_t n,
                      ingest_arena *a, srv_ev *ev, char *reason)
{
    const type_def *td = NULL;
    uint32_t env[ENV_N];
    uint64_t v;
    uint32_t t;
    size_t a0 = a->len;
    int rc;

    memset(ev, 0, sizeof(*ev));
    ev->occ = -1.0;
    reason[0] = '\0';
    pthread_once(&ks_once, ks_init);
    if (ks_err) {
        snprintf(reason, INGEST_REASON_MAX, "internal: a field table");
        return GPUFL_EINTERNAL;
    }
    if (n > INGEST_MAX_LINE) {
        snprintf(reason, INGEST_REASON_MAX, "line longer than %u bytes",
                 INGEST_MAX_LINE);
        return GPUFL_ETOOBIG;
    }
    rc = jsonl_doc_parse_obj(d, line, n);
    if (rc) {
        snprintf(reason, INGEST_REASON_MAX, "invalid JSON at byte %zu: %s",
                 d->err_off, d->err ? d->err : "?");
        return rc;
    }
    ev->raw.p = line;
    ev->raw.n = n;
    jsonl_doc_findset(d, &ks_env, env);
    if (jsonl_tok_u64(d, env[ENV_V], &v) || v != 1)
        return fail3(reason, "envelope: \"v\" must be 1", "", "");
    t = env[ENV_SID];
    if (jsonl_tok_type(d, t) != JSONL_STRING ||
        !ingest_is_uuid(line + d->tok[t].off, d->tok[t].len))
        return fail3(reason, "envelope: \"sid\" must be a lower-case UUID", "",
                     "");
    memcpy(ev->sid, line + d->tok[t].off, 36);
    ev->sid[36] = '\0';
    if (!jsonl_tok_streq(d, env[ENV_ST], stream_names[st],
                         strlen(stream_names[st])))
        return fail3(reason, "envelope: \"st\" must be \"", stream_names[st],
                     "\" on this endpoint");
    ev->st = (uint8_t)st;
    if (jsonl_tok_u64(d, env[ENV_SEQ], &ev->seq))
        return fail3(reason, "envelope: \"seq\" must be an unsigned integer",
                     "", "");
    if (jsonl_tok_u64(d, env[ENV_TS], &ev->ts) || ev->ts == 0 ||
        ev->ts > (uint64_t)INT64_MAX)
        return fail3(reason, "envelope: \"ts\" must be a positive integer", "",
                     "");
    if (ev->seq > (uint64_t)INT64_MAX)
        return fail3(reason, "envelope: \"seq\" too large", "", "");
    t = env[ENV_TYPE];
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (jsonl_tok_streq(d, t, types[i].name, types[i].len)) {
            td = &types[i];
            break;
        }
    }
    if (!td)
        return fail3(reason, "envelope: unknown \"type\"", "", "");
    if (!(td->streams & (1u << st)))
        return fail3(reason, "type \"", td->name,
                     "\" does not belong to this stream");
    ev->type = td->type;
    rc = fields_get(d, td->fields, &ks_types[td - types], a, ev, reason);
    if (!rc && td->type == EV_DICT)
        rc = dict_get(d, a, ev, reason);
    if (!rc && (td->type == EV_GPU || td->type == EV_HOST))
        rc = sys_get(d, ev, reason);
    if (!rc && td->type == EV_PCSAMP)
        rc = stalls_check(d, reason);
    if (!rc && td->type == EV_VERDICT)
        rc = verdict_check(d, ev, reason);
    if (!rc && td->type == EV_WASTE) {
        srv_waste wl;
        rc = srv_waste_parse(d, &wl, reason);
    }
    if (!rc && (td->type == EV_KERNEL || td->type == EV_MEMCPY ||
                td->type == EV_MEMSET))
        rc = api_get(d, env[ENV_API], ev, reason);
    if (!rc && td->type == EV_SESSION)
        rc = streams_get(d, st, ev, reason);
    if (!rc && td->type == EV_SESSION)
        rc = job_get(d, ev, reason);
    if (!rc && ev->occ > 1e6)
        rc = fail3(reason, "field \"occ\": out of range", "", "");
    /* integers land in signed 64-bit database columns */
    if (!rc && (ev->dur | ev->bytes | ev->id | ev->scope | ev->stream | ev->pc |
                ev->cfg | ev->name | ev->path | ev->dev) > (uint64_t)INT64_MAX)
        rc = fail3(reason, "a numeric field exceeds 2^63-1", "", "");
    /* a device op spans [ts, ts + dur]: its end must be a time too, or
     * the session's last_ts, the kernel's end and its timeline buckets
     * would wrap negative (docs/api.md) */
    if (!rc && td->type >= EV_KERNEL && td->type <= EV_FREE &&
        ev->dur > (uint64_t)INT64_MAX - ev->ts)
        rc = fail3(reason, "ts + dur exceeds 2^63-1 ns", "", "");
    if (rc)
        a->len = a0;
    return rc;
}
