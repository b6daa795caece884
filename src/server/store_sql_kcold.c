/*
 * store_sql_kcold.c - the cold tier of kernel and op blocks (issue 23;
 * docs/server.md "Cold tier"): blocks of sessions silent for --hot-age
 * move to S3, and read back through a bounded local cache (kcache.h).
 * Kernel blocks (kblocks, recorded in kcold) and op blocks (oblocks,
 * recorded in ocold) go the same way; what differs between them - the
 * table, its key, the object's name - is a kc_kind below.
 *
 * A move is: PUT the block's bytes as a new object, then one transaction
 * that records the object (kcold, ocold) and replaces the row's bytes with a
 * 24-byte stub naming it (KC_MAGIC, a random object id, the length) -
 * only if the row still holds exactly the bytes sent.  S3 down: the PUT
 * fails, nothing changes, and the mover waits (doubling, up to
 * KC_DELAY_MAX_S) before it tries again; a crash between the PUT and the
 * commit leaves a hot block and an object nobody names (harmless, and
 * overwritten by no one: every move takes a fresh id).
 *
 * Every reader of a block's bytes goes through sq_kb_bytes (op blocks:
 * sq_ob_bytes), which hands a stub to sq_kc_bytes here: the cache, else
 * S3 (then the cache), the length checked against the stub.  S3
 * unreachable is GPUFL_EAGAIN (the API's 503 "cold storage
 * unavailable"); nothing is lost, the block is read when S3 is back.
 *
 * An object is deleted when no row names it any more: the session was
 * pruned by retention, or its block merged into another (kcold rows
 * whose stub no kblocks row holds, ocold rows whose stub no oblocks row
 * holds; one pass deletes the object, then the row, so a failed DELETE
 * is tried again).  Because ids are never reused, an object once unnamed
 * is never named again: the sweep cannot race a move.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/log.h"
#include "httpc/s3.h"
#include "kblock.h"
#include "kcache.h"
#include "oblock.h"

/* The stub a cold row's `block` holds: magic, object id, length (LE). */
#define KC_STUB_LEN 24
static const unsigned char kc_magic[8] = { 'G', 'F', 'L', 'K',
                                           'C', 'O', 'L', 'D' };
/* Blocks one pass moves, objects it deletes, at most. */
#define KC_MOVE_MAX 256
#define KC_SWEEP_MAX 256
/* The mover's wait after S3 failed: from 1 s, doubling, up to this. */
#define KC_DELAY_MAX_S 300
/* S3 requests' time limit (a read of a cold block waits this long at
 * most before it answers 503). */
#define KC_S3_TIMEOUT_MS 10000
#define KC_KEY_MAX 512
/* Cold blocks each thread keeps decoded-ready in memory: the ingest's
 * duplicate check reads a block once per kernel, and a replay alternates
 * between a session's streams, so without these a small cache would
 * fetch the same few blocks from S3 again and again. */
#define KC_TL_N 4
#define KC_ADD(f) __atomic_fetch_add(&(f), 1, __ATOMIC_RELAXED)
#define KC_GET(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)

/* A cold block's bytes at most, of either kind. */
#define KC_BYTES_MAX (KB_BLOCK_MAX > OB_BLOCK_MAX ? KB_BLOCK_MAX : OB_BLOCK_MAX)

/* What differs between the two kinds of block.  A block's key is
 * (sess, stream, seq_lo) for kernels, (sess, seq_lo) for ops: the SQL
 * binds the key first (kc_bind), then n, the stub and the bytes as the
 * next parameters.  Objects: <prefix><sess>/<stream>/<seq_lo>-<id> for
 * kernels, <prefix><sess>/ops/<seq_lo>-<id> for ops - a stream is a
 * number, so the two never meet (nor do their cache files). */
typedef struct kc_kind {
    const char *what; /* logs */
    int stream;       /* 1: the key has a stream */
    const char *pick, *mark, *record, *sweep, *unrecord;
} kc_kind;

static const kc_kind kc_kinds[SQ_KC_N] = {
    [SQ_KC_KERNELS] = {
        .what = "kernel",
        .stream = 1,
        .pick = "SELECT b.sess, b.stream, b.seq_lo, b.n, b.block FROM"
                " kblocks b JOIN sessions x ON x.id=b.sess WHERE"
                " x.last_seen < ? AND length(b.block) <> 24 LIMIT 1",
        .mark = "UPDATE kblocks SET block=?5 WHERE sess=?1 AND stream=?2"
                " AND seq_lo=?3 AND n=?4 AND block=?6",
        .record = "INSERT INTO kcold VALUES(?,?,?,?,?)",
        .sweep = "SELECT sess, stream, seq_lo, stub FROM kcold c WHERE"
                 " NOT EXISTS (SELECT 1 FROM kblocks b WHERE"
                 " b.sess=c.sess AND b.stream=c.stream AND"
                 " b.seq_lo=c.seq_lo AND b.block=c.stub) LIMIT ?",
        .unrecord = "DELETE FROM kcold WHERE sess=? AND stream=? AND"
                    " seq_lo=? AND stub=?",
    },
    [SQ_KC_OPS] = {
        .what = "op",
        .stream = 0,
        .pick = "SELECT b.sess, 0, b.seq_lo, b.n, b.payload FROM"
                " oblocks b JOIN sessions x ON x.id=b.sess WHERE"
                " x.last_seen < ? AND length(b.payload) <> 24 LIMIT 1",
        .mark = "UPDATE oblocks SET payload=?4 WHERE sess=?1 AND"
                " seq_lo=?2 AND n=?3 AND payload=?5",
        .record = "INSERT INTO ocold VALUES(?,?,?,?)",
        .sweep = "SELECT sess, 0, seq_lo, stub FROM ocold c WHERE"
                 " NOT EXISTS (SELECT 1 FROM oblocks b WHERE"
                 " b.sess=c.sess AND b.seq_lo=c.seq_lo AND"
                 " b.payload=c.stub) LIMIT ?",
        .unrecord = "DELETE FROM ocold WHERE sess=? AND seq_lo=? AND"
                    " stub=?",
    },
};

/* key[0..3) (sess, stream, seq_lo) bound from ?1 as kind's key; the
 * next parameter's index. */
static int kc_bind(sdb_stmt *st, const kc_kind *t, const int64_t *key)
{
    int j = 1;
    qbind_i64(st, j++, key[0]);
    if (t->stream)
        qbind_i64(st, j++, key[1]);
    qbind_i64(st, j++, key[2]);
    return j;
}

/* A thread's last KC_TL_N cold blocks (pthread key sq_kcold.tl). */
typedef struct kc_tl {
    struct {
        int64_t sess, stream, seq_lo;
        uint64_t obj, used;
        int kind;
        gbuf g;
    } e[KC_TL_N];
    uint64_t clock;
} kc_tl;

struct sq_kcold {
    s3_client *rd, *mv; /* reads (under rd_lock); the mover's (maint) */
    pthread_mutex_t rd_lock;
    kcache *cache;
    char prefix[256];
    pthread_key_t tl; /* each thread's kc_tl */
    time_t next_try;  /* the mover's next try after S3 failed */
    unsigned delay_s;
    /* srv_cold_stats, added to by every reader thread (relaxed) */
    uint64_t moved, moved_ops, deleted, s3_errors, reads_cache, reads_s3,
        read_errors;
};

int sq_kc_is_stub(const unsigned char *b, size_t len)
{
    return len == KC_STUB_LEN && !memcmp(b, kc_magic, sizeof(kc_magic));
}

static void put_le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The object's key (k's prefix) or, prefix NULL, its cache file's name:
 * the same parts, '_' for '/'. */
static void kc_key(const char *prefix, int kind, int64_t sess, int64_t stream,
                   int64_t seq_lo, uint64_t obj, char *out, size_t cap)
{
    const char *sep = prefix ? "/" : "_";
    char mid[32];

    if (kind == SQ_KC_OPS)
        snprintf(mid, sizeof(mid), "ops");
    else
        snprintf(mid, sizeof(mid), "%lld", (long long)stream);
    snprintf(out, cap, "%s%lld%s%s%s%lld-%016llx", prefix ? prefix : "",
             (long long)sess, sep, mid, sep, (long long)seq_lo,
             (unsigned long long)obj);
}

static void tl_free(void *p)
{
    kc_tl *t = p;
    for (int i = 0; i < KC_TL_N; i++)
        gbuf_release(&t->e[i].g);
    free(t);
}

void sq_kc_release(srv_store *s)
{
    sq_kcold *k = s->kc;
    kc_tl *t;

    if (!k)
        return;
    /* this thread's blocks; the others' go with their threads */
    if ((t = pthread_getspecific(k->tl)) != NULL)
        tl_free(t);
    pthread_key_delete(k->tl);
    s3_client_free(k->rd);
    s3_client_free(k->mv);
    kcache_close(k->cache);
    pthread_mutex_destroy(&k->rd_lock);
    free(k);
    s->kc = NULL;
}

int srv_store_cold_open(srv_store *s, const srv_cold_cfg *c, char *err,
                        size_t cap)
{
    sq_kcold *k = calloc(1, sizeof(*k));
    int rc = GPUFL_EINVAL;

    if (!k) {
        snprintf(err, cap, "out of memory");
        return GPUFL_ENOMEM;
    }
    pthread_mutex_init(&k->rd_lock, NULL);
    if (pthread_key_create(&k->tl, tl_free)) {
        pthread_mutex_destroy(&k->rd_lock);
        free(k);
        snprintf(err, cap, "out of memory");
        return GPUFL_ENOMEM;
    }
    s->kc = k;
    if ((size_t)snprintf(k->prefix, sizeof(k->prefix), "%s", c->prefix) >=
        sizeof(k->prefix)) {
        snprintf(err, cap, "--cold-s3-prefix: longer than %zu bytes",
                 sizeof(k->prefix) - 1);
        goto fail;
    }
    k->rd = s3_client_new(c->endpoint, c->bucket, c->region, c->access,
                          c->secret, KC_S3_TIMEOUT_MS, c->ca_file, err, cap);
    k->mv =
        k->rd ? s3_client_new(c->endpoint, c->bucket, c->region, c->access,
                              c->secret, KC_S3_TIMEOUT_MS, c->ca_file, err, cap)
              : NULL;
    if (!k->rd || !k->mv)
        goto fail;
    if ((rc = kcache_open(&k->cache, c->cache_dir, c->cache_max, err, cap)))
        goto fail;
    return GPUFL_OK;
fail:
    sq_kc_release(s);
    return rc ? rc : GPUFL_EINVAL;
}

/* ---- reads ---- */

static kc_tl *tl_get(sq_kcold *k)
{
    kc_tl *t = pthread_getspecific(k->tl);
    if (t)
        return t;
    if (!(t = calloc(1, sizeof(*t))))
        return NULL;
    for (int i = 0; i < KC_TL_N; i++)
        gbuf_init(&t->e[i].g, KC_BYTES_MAX);
    if (pthread_setspecific(k->tl, t)) {
        free(t);
        return NULL;
    }
    return t;
}

int sq_kc_bytes(srv_store *s, int kind, int64_t sess, int64_t stream,
                int64_t seq_lo, const unsigned char **b, size_t *len)
{
    sq_kcold *k = s->kc;
    uint64_t obj = get_le(*b + 8), want = get_le(*b + 16);
    char key[KC_KEY_MAX], name[KCACHE_NAME_MAX + 1], why[256] = "";
    kc_tl *t;
    gbuf *g;
    int rc, i, old = 0;

    *b = NULL;
    *len = 0;
    if (!k) {
        glog_error("kcold",
                   "session %lld stream %lld seq %lld: the %s block is in "
                   "S3 and no --cold-s3-endpoint is set",
                   (long long)sess, (long long)stream, (long long)seq_lo,
                   kc_kinds[kind].what);
        return GPUFL_EAGAIN;
    }
    if (!(t = tl_get(k)))
        return GPUFL_ENOMEM;
    /* this thread's own copy, else the least recently used slot's turn
     * (never the block handed out last: it is the most recent) */
    for (i = 0; i < KC_TL_N; i++) {
        if (t->e[i].used && t->e[i].kind == kind && t->e[i].sess == sess &&
            t->e[i].stream == stream && t->e[i].seq_lo == seq_lo &&
            t->e[i].obj == obj && t->e[i].g.len == want) {
            t->e[i].used = ++t->clock;
            g = &t->e[i].g;
            goto ok;
        }
        if (t->e[i].used < t->e[old].used)
            old = i;
    }
    t->e[old].used = 0;
    g = &t->e[old].g;
    kc_key(NULL, kind, sess, stream, seq_lo, obj, name, sizeof(name));
    if (kcache_get(k->cache, name, g) == 0 && g->len == want) {
        KC_ADD(k->reads_cache);
        goto have;
    }
    kc_key(k->prefix, kind, sess, stream, seq_lo, obj, key, sizeof(key));
    pthread_mutex_lock(&k->rd_lock);
    rc = s3_get(k->rd, key, g, why, sizeof(why));
    pthread_mutex_unlock(&k->rd_lock);
    if (rc == S3_NOTFOUND || (!rc && g->len != want)) {
        /* an object gone or cut: a loss, said as one */
        KC_ADD(k->read_errors);
        glog_error("kcold", "%s: %s (%zu bytes, want %llu): the block is lost",
                   key, rc ? "no such object in S3" : "wrong length", g->len,
                   (unsigned long long)want);
        return GPUFL_EINTERNAL;
    }
    if (rc) {
        KC_ADD(k->read_errors);
        glog_warn("kcold", "%s: cannot read from S3: %s", key, why);
        return GPUFL_EAGAIN;
    }
    KC_ADD(k->reads_s3);
    kcache_put(k->cache, name, g->p, g->len);
have:
    t->e[old].kind = kind;
    t->e[old].sess = sess;
    t->e[old].stream = stream;
    t->e[old].seq_lo = seq_lo;
    t->e[old].obj = obj;
    t->e[old].used = ++t->clock;
ok:
    *b = (const unsigned char *)g->p;
    *len = g->len;
    return GPUFL_OK;
}

/* ---- the mover and the sweep (maintenance thread) ---- */

/* kind's records (kcold, ocold) whose stub no block row holds: their
 * objects out of S3, then the rows; max at most. */
static int kc_sweep(srv_store *s, sq_kcold *k, int kind, size_t max,
                    uint64_t *deleted)
{
    const kc_kind *t = &kc_kinds[kind];
    struct {
        int64_t sess, stream, seq_lo;
        unsigned char stub[KC_STUB_LEN];
    } *v = calloc(KC_SWEEP_MAX, sizeof(*v));
    sdb *r = NULL;
    sdb_stmt *st = NULL;
    size_t n = 0;
    int rc = GPUFL_OK;

    if (!v)
        return GPUFL_ENOMEM;
    r = sq_reader_get(s);
    if (sdb_prepare(r, t->sweep, &st)) {
        sq_reader_put(s, r);
        free(v);
        return GPUFL_EINTERNAL;
    }
    qbind_i64(st, 1, (int64_t)max);
    while (n < max && (rc = sdb_step(st)) == SDB_ROW) {
        size_t len = 0;
        const unsigned char *p = qcol_blob(st, 3, &len);
        if (!p || !sq_kc_is_stub(p, len))
            continue;
        v[n].sess = qcol_i64(st, 0);
        v[n].stream = qcol_i64(st, 1);
        v[n].seq_lo = qcol_i64(st, 2);
        memcpy(v[n].stub, p, KC_STUB_LEN);
        n++;
    }
    sdb_finalize(st);
    sq_reader_put(s, r);
    rc = rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
    for (size_t i = 0; !rc && i < n; i++) {
        char key[KC_KEY_MAX], why[256] = "";
        int64_t vk[3] = { v[i].sess, v[i].stream, v[i].seq_lo };
        kc_key(k->prefix, kind, v[i].sess, v[i].stream, v[i].seq_lo,
               get_le(v[i].stub + 8), key, sizeof(key));
        if (s3_delete(k->mv, key, why, sizeof(why))) {
            glog_warn("kcold", "%s: cannot delete from S3: %s", key, why);
            rc = GPUFL_EAGAIN;
            break;
        }
        pthread_mutex_lock(&s->wlock);
        if (sdb_prepare(s->w, t->unrecord, &st) == 0) {
            qbind_blob(st, kc_bind(st, t, vk), v[i].stub, KC_STUB_LEN);
            rc = sdb_err(sdb_step(st));
            sdb_finalize(st);
        } else {
            rc = GPUFL_EINTERNAL;
        }
        pthread_mutex_unlock(&s->wlock);
        if (!rc)
            (*deleted)++;
    }
    free(v);
    return rc;
}

/* One hot block of kind of a session silent since before cutoff: its
 * key (sess, stream, seq_lo, n) and its bytes copied into buf.  *found 0:
 * none left. */
static int kc_pick(srv_store *s, int kind, int64_t cutoff, int64_t key[4],
                   unsigned char *buf, size_t *len, int *found)
{
    sdb *r = sq_reader_get(s);
    sdb_stmt *st = NULL;
    int rc;

    *found = 0;
    if (sdb_prepare(r, kc_kinds[kind].pick, &st)) {
        sq_reader_put(s, r);
        return GPUFL_EINTERNAL;
    }
    qbind_i64(st, 1, cutoff);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        const unsigned char *p = qcol_blob(st, 4, len);
        if (p && *len && *len <= KC_BYTES_MAX) {
            for (int i = 0; i < 4; i++)
                key[i] = qcol_i64(st, i);
            memcpy(buf, p, *len);
            *found = 1;
        }
        rc = *found ? GPUFL_OK : GPUFL_EINTERNAL;
    } else {
        rc = rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
    }
    sdb_finalize(st);
    sq_reader_put(s, r);
    return rc;
}

/* The row's bytes replaced by stub, if it still holds buf; *moved 0:
 * it changed meanwhile (merged, pruned), and the object is unnamed. */
static int kc_mark(srv_store *s, int kind, const int64_t key[4],
                   const unsigned char *buf, size_t len,
                   const unsigned char *stub, int *moved)
{
    const kc_kind *t = &kc_kinds[kind];
    sdb_stmt *st = NULL;
    int rc, j;

    *moved = 0;
    pthread_mutex_lock(&s->wlock);
    if ((rc = sq_kb_tx_begin(s)) != 0)
        goto out;
    if (sdb_prepare(s->w, t->mark, &st)) {
        rc = sq_kb_tx_end(s, GPUFL_EINTERNAL);
        goto out;
    }
    j = kc_bind(st, t, key);
    qbind_i64(st, j, key[3]);
    qbind_blob(st, j + 1, stub, KC_STUB_LEN);
    qbind_blob(st, j + 2, buf, len);
    rc = sdb_err(sdb_step(st));
    sdb_finalize(st);
    st = NULL;
    if (!rc && sdb_changes(s->w) == 1) {
        if (sdb_prepare(s->w, t->record, &st)) {
            rc = GPUFL_EINTERNAL;
        } else {
            j = kc_bind(st, t, key);
            qbind_blob(st, j, stub, KC_STUB_LEN);
            qbind_i64(st, j + 1, (int64_t)time(NULL));
            rc = sdb_err(sdb_step(st));
            sdb_finalize(st);
        }
        *moved = !rc;
    }
    rc = sq_kb_tx_end(s, rc);
    if (rc)
        *moved = 0;
out:
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

/* Blocks of kind of sessions silent for hot_age_s to S3, one at a time,
 * up to max. */
static int kc_move(srv_store *s, sq_kcold *k, int kind, uint64_t hot_age_s,
                   int max, uint64_t *moved)
{
    unsigned char *buf = malloc(KC_BYTES_MAX);
    int64_t cutoff = (int64_t)time(NULL) - (int64_t)hot_age_s;
    int rc = GPUFL_OK;

    if (!buf)
        return GPUFL_ENOMEM;
    for (int i = 0; !rc && i < max; i++) {
        int64_t key[4];
        unsigned char stub[KC_STUB_LEN];
        char okey[KC_KEY_MAX], why[256] = "";
        uint64_t obj = 0;
        size_t len = 0;
        int found = 0, done = 0;

        if ((rc = kc_pick(s, kind, cutoff, key, buf, &len, &found)) != 0 ||
            !found)
            break;
        if (getrandom(&obj, sizeof(obj), 0) != (ssize_t)sizeof(obj)) {
            rc = GPUFL_EIO;
            break;
        }
        memcpy(stub, kc_magic, sizeof(kc_magic));
        put_le(stub + 8, obj);
        put_le(stub + 16, len);
        kc_key(k->prefix, kind, key[0], key[1], key[2], obj, okey,
               sizeof(okey));
        if (s3_put(k->mv, okey, buf, len, why, sizeof(why))) {
            glog_warn("kcold",
                      "%s: cannot write to S3: %s; the %s block stays "
                      "in the database",
                      okey, why, kc_kinds[kind].what);
            rc = GPUFL_EAGAIN;
            break;
        }
        if ((rc = kc_mark(s, kind, key, buf, len, stub, &done)) != 0 || !done) {
            /* nobody names it: out again (the sweep cannot see it) */
            s3_delete(k->mv, okey, why, sizeof(why));
            if (!rc)
                continue;
            break;
        }
        (*moved)++;
    }
    free(buf);
    return rc;
}

int srv_store_cold_pass(srv_store *s, uint64_t hot_age_s, uint64_t *moved,
                        uint64_t *deleted)
{
    sq_kcold *k = s->kc;
    time_t now = time(NULL);
    uint64_t mk = 0, mo = 0;
    int rc;

    *moved = 0;
    *deleted = 0;
    if (!k)
        return GPUFL_OK;
    if (now < k->next_try)
        return GPUFL_EAGAIN;
    /* a pass's caps are both kinds' together */
    rc = kc_sweep(s, k, SQ_KC_KERNELS, KC_SWEEP_MAX, deleted);
    if (!rc && *deleted < KC_SWEEP_MAX)
        rc = kc_sweep(s, k, SQ_KC_OPS, KC_SWEEP_MAX - *deleted, deleted);
    if (!rc && hot_age_s)
        rc = kc_move(s, k, SQ_KC_KERNELS, hot_age_s, KC_MOVE_MAX, &mk);
    if (!rc && hot_age_s && mk < KC_MOVE_MAX)
        rc = kc_move(s, k, SQ_KC_OPS, hot_age_s, KC_MOVE_MAX - (int)mk, &mo);
    *moved = mk + mo;
    __atomic_fetch_add(&k->moved, mk, __ATOMIC_RELAXED);
    __atomic_fetch_add(&k->moved_ops, mo, __ATOMIC_RELAXED);
    __atomic_fetch_add(&k->deleted, *deleted, __ATOMIC_RELAXED);
    if (rc == GPUFL_EAGAIN) {
        KC_ADD(k->s3_errors);
        k->delay_s = k->delay_s ? k->delay_s * 2 : 1;
        if (k->delay_s > KC_DELAY_MAX_S)
            k->delay_s = KC_DELAY_MAX_S;
        k->next_try = now + (time_t)k->delay_s;
        glog_warn("kcold",
                  "S3 unavailable: blocks stay in the database; "
                  "trying again in %u s",
                  k->delay_s);
    } else {
        k->delay_s = 0;
        k->next_try = 0;
    }
    return rc;
}

void srv_store_cold_stats(srv_store *s, srv_cold_stats *o)
{
    sq_kcold *k = s->kc;
    uint64_t files = 0;

    memset(o, 0, sizeof(*o));
    if (!k)
        return;
    o->on = 1;
    o->moved = KC_GET(k->moved);
    o->moved_ops = KC_GET(k->moved_ops);
    o->deleted = KC_GET(k->deleted);
    o->s3_errors = KC_GET(k->s3_errors);
    o->reads_cache = KC_GET(k->reads_cache);
    o->reads_s3 = KC_GET(k->reads_s3);
    o->read_errors = KC_GET(k->read_errors);
    kcache_usage(k->cache, &o->cache_bytes, &files, &o->cache_evicted);
}
