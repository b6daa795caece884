/*
 * db_pg.c - db.h on PostgreSQL through libpq.
 *
 * SQLite's step-through-rows model over libpq: the first sdb_step()
 * prepares the statement (once per connection, named, with the parameter
 * types bound at that time) and executes it; the whole result is then
 * held and stepped through.  "?N" placeholders become "$N".  Parameters
 * travel in text format, integers and doubles printed exactly, but for
 * blobs: those go in binary, as they are (hex doubled a kernel block's
 * bytes on the wire and cost both sides a pass over them).  A finalized
 * statement stays prepared on its connection (db_pg_kept.c).  Results
 * come as text but for statements of blobs and integers alone (a kernel
 * block's read): after its first run in text such a statement asks for
 * binary results (bin_ok), so PostgreSQL does not hex-encode each block
 * and we do not decode it again (PQunescapeBytea and a copy).
 *
 * A lost connection (db.h) is made again by the next command that finds
 * it gone: before each command an idle socket with something to read is
 * read, so a server's goodbye (EOF, FATAL 57P01) is seen before a command
 * goes into a dead socket, and that command then runs on a new connection
 * instead of failing.  Attempts back off from PG_BACKOFF_MIN_MS to
 * PG_BACKOFF_MAX_MS; in between, commands fail at once.  Each connection
 * has a generation; a statement prepared in an older one is prepared again.
 *
 * sdb_send() pipelines (libpq's pipeline mode, db_pg_pipe.c): every
 * command here that waits for a result first collects the results of the
 * statements sent before it (sdb_pg_collect).
 */
#include "db_pg_int.h"

#include <gpufl/gpufl.h>

#include <libpq-fe.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

/* Parameters one statement may have (the protocol's limit). */
#define PG_PARAMS_MAX 65535

/* Reconnection: the first retry after this, doubling to the cap (the
 * longest a recovered database waits for us). */
#define PG_BACKOFF_MIN_MS 50
#define PG_BACKOFF_MAX_MS 2000

extern const sdb_ops sdb_pg_ops;

/* Notices are dropped, but a FATAL one is the server's goodbye: it
 * arrives this way when nothing is in flight (an idle connection's
 * backend terminated or shut down), maybe before the socket closes. */
static void on_notice(void *arg, const PGresult *r)
{
    sdb *db = arg;
    const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);

    if (sev && (!strcmp(sev, "FATAL") || !strcmp(sev, "PANIC"))) {
        db->goodbye = 1;
        snprintf(db->err, sizeof(db->err), "%s", PQresultErrorMessage(r));
    }
}

/* Connection defaults a URL may override (later keywords win): a dead
 * host is given up after connect_timeout instead of the kernel's minutes,
 * and keepalives find a peer that vanished (a failover) within a minute. */
static PGconn *connect_url(const char *url)
{
    static const char *const keys[] = {
        "connect_timeout",  "keepalives_idle", "keepalives_interval",
        "keepalives_count", "dbname",          NULL
    };
    const char *vals[] = { "5", "30", "10", "3", url, NULL };

    return PQconnectdbParams(keys, vals, 1);
}

int sdb_pg_open(const char *url, sdb **out, char *err, size_t cap)
{
    sdb *db = calloc(1, sizeof(*db));

    *out = NULL;
    if (!db)
        return GPUFL_ENOMEM;
    db->head.ops = &sdb_pg_ops;
    db->head.dialect = SDB_POSTGRES;
    db->c = connect_url(url);
    if (!db->c || PQstatus(db->c) != CONNECTION_OK) {
        snprintf(err, cap, "cannot connect to PostgreSQL: %s",
                 db->c ? PQerrorMessage(db->c) : "out of memory");
        PQfinish(db->c);
        free(db);
        return GPUFL_EUNAVAIL;
    }
    PQsetNoticeReceiver(db->c, on_notice, db);
    db->txs = PQTRANS_IDLE;
    *out = db;
    return GPUFL_OK;
}

/* The connection is gone: the next command makes it again (or, if it was
 * inside a transaction, after the caller's ROLLBACK or next BEGIN). */
void sdb_pg_mark_lost(sdb *db)
{
    if (db->lost)
        return;
    db->lost = 1;
    db->tx_lost = db->txs == PQTRANS_INTRANS || db->txs == PQTRANS_INERROR ||
                  db->txs == PQTRANS_ACTIVE;
}

/* After a command: where it left the transaction, for sdb_pg_mark_lost (a
 * command that then fails because the connection died keeps this). */
void sdb_pg_after(sdb *db)
{
    if (PQstatus(db->c) == CONNECTION_OK)
        db->txs = PQtransactionStatus(db->c);
}

static int reconnect(sdb *db)
{
    uint64_t now = clock_mono_ns() / 1000000;
    char why[sizeof(db->err)];

    if (now < db->retry_at) {
        snprintf(db->err, sizeof(db->err),
                 "PostgreSQL unreachable; next reconnection attempt in"
                 " %llu ms",
                 (unsigned long long)(db->retry_at - now));
        return GPUFL_EUNAVAIL;
    }
    /* the reason the old connection ended, for the watcher */
    snprintf(why, sizeof(why), "%s", db->err);
    PQreset(db->c);
    if (PQstatus(db->c) == CONNECTION_OK) {
        PGresult *r = db->head.setup ? PQexec(db->c, db->head.setup) : NULL;
        int ok = !r || PQresultStatus(r) == PGRES_COMMAND_OK ||
                 PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
        if (ok) {
            db->lost = db->tx_lost = db->goodbye = 0;
            db->gen++;
            db->backoff_ms = 0;
            db->retry_at = 0;
            db->txs = PQTRANS_IDLE;
            db->err[0] = '\0';
            sdb_notify(db, SDB_EV_UP, why);
            return GPUFL_OK;
        }
    }
    db->backoff_ms = db->backoff_ms ? 2 * db->backoff_ms : PG_BACKOFF_MIN_MS;
    if (db->backoff_ms > PG_BACKOFF_MAX_MS)
        db->backoff_ms = PG_BACKOFF_MAX_MS;
    db->retry_at = now + db->backoff_ms;
    snprintf(db->err, sizeof(db->err), "cannot reconnect to PostgreSQL: %s",
             PQerrorMessage(db->c));
    sdb_notify(db, SDB_EV_DOWN, db->err);
    return GPUFL_EUNAVAIL;
}

/* Reads what an idle connection has waiting: a notice, or the server's
 * goodbye (a FATAL message, then EOF).  Nothing is in flight, so libpq
 * hands an error it parses now to the notice processor.  0 while the
 * connection is usable. */
static int probe(sdb *db)
{
    for (int i = 0; i < 8; i++) {
        struct pollfd p = { PQsocket(db->c), POLLIN, 0 };
        if (poll(&p, 1, 0) <= 0)
            return 0;
        if (!PQconsumeInput(db->c))
            return -1;
        (void)PQisBusy(db->c);
        if (PQstatus(db->c) != CONNECTION_OK || db->goodbye)
            return -1;
    }
    return 0;
}

/* Before each command: a usable connection, made again if it was lost. */
int sdb_pg_ready(sdb *db)
{
    if (!db->lost && PQstatus(db->c) == CONNECTION_OK) {
        /* where the last command left us, for sdb_pg_mark_lost: a connection
         * found gone between two commands of a transaction must not be
         * replaced under the rest of it */
        db->txs = PQtransactionStatus(db->c);
        if (probe(db) == 0)
            return GPUFL_OK;
        if (!db->goodbye)
            snprintf(db->err, sizeof(db->err), "%s", PQerrorMessage(db->c));
    }
    sdb_pg_mark_lost(db);
    if (db->tx_lost) {
        snprintf(db->err, sizeof(db->err),
                 "the connection to PostgreSQL was lost inside a"
                 " transaction (rolled back by the server)");
        return GPUFL_EUNAVAIL;
    }
    return reconnect(db);
}

static void pg_close(sdb *db)
{
    /* the connection's end deallocates them on the server */
    for (int i = 0; i < PG_STMT_CACHE; i++)
        sdb_pg_kept_free(&db->kept[i]);
    PQfinish(db->c);
    free(db);
}

/* A failed result: remember why, and whether the server is reachable. */
int sdb_pg_fail(sdb *db, PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;

    snprintf(db->err, sizeof(db->err), "%s", PQerrorMessage(db->c));
    /* gone: no socket, a connection-class error, or the server ending
     * this session (57P01 admin, 57P02 crash, 57P03 starting up) */
    if (PQstatus(db->c) != CONNECTION_OK ||
        (state && (!strncmp(state, "08", 2) || !strcmp(state, "57P01") ||
                   !strcmp(state, "57P02") || !strcmp(state, "57P03")))) {
        sdb_pg_mark_lost(db);
        sdb_notify(db, SDB_EV_DOWN, db->err);
        return GPUFL_EUNAVAIL;
    }
    if (state && !strcmp(state, "53100"))
        sdb_notify(db, SDB_EV_NOSPC, db->err);
    /* connection, resources, operator intervention, serialization */
    if (state && (!strncmp(state, "08", 2) || !strncmp(state, "53", 2) ||
                  !strncmp(state, "57", 2) || !strncmp(state, "40", 2)))
        return GPUFL_EUNAVAIL;
    return GPUFL_EINTERNAL;
}

static int pg_exec(sdb *db, const char *sql)
{
    int rollback = !strncmp(sql, "ROLLBACK", 8);
    PGresult *r;
    ExecStatusType s;
    int rc;

    /* a sent statement's error is this command's (a COMMIT of a failed
     * transaction would answer ROLLBACK, and succeed); a ROLLBACK goes on */
    if ((db->piped || db->pipe_rc) && (rc = sdb_pg_collect(db)) != 0 &&
        !rollback)
        return rc;
    /* a new BEGIN abandons a transaction whose connection was lost (the
     * caller saw it fail) */
    if (db->lost && !strncmp(sql, "BEGIN", 5))
        db->tx_lost = 0;
    rc = db->lost && rollback ? GPUFL_EUNAVAIL : sdb_pg_ready(db);
    if (rc) {
        /* a lost connection has no transaction left to roll back */
        if (rollback && db->lost) {
            db->tx_lost = 0;
            return GPUFL_OK;
        }
        return rc;
    }
    r = PQexec(db->c, sql);
    s = PQresultStatus(r);
    rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? GPUFL_OK
                                                       : sdb_pg_fail(db, r);
    PQclear(r);
    sdb_pg_after(db);
    return rc;
}

static const char *pg_errmsg(sdb *db)
{
    return db->err[0] ? db->err : PQerrorMessage(db->c);
}

static int64_t pg_changes(sdb *db)
{
    return db->changes;
}

/* "?N" and "?" to "$N", outside string literals. */
static int translate(const char *in, char *out, size_t cap, int *nparams,
                     unsigned char *used)
{
    /* used: PG_PARAMS_MAX + 1 bytes */
    size_t n = 0;
    int seq = 0, max = 0, quote = 0;

    for (const char *p = in; *p; p++) {
        if (n + 8 >= cap)
            return -1;
        if (*p == '\'')
            quote = !quote;
        if (*p != '?' || quote) {
            out[n++] = *p;
            continue;
        }
        if (p[1] >= '0' && p[1] <= '9') {
            int v = 0;
            while (p[1] >= '0' && p[1] <= '9')
                v = v * 10 + (*++p - '0');
            seq = v;
        } else {
            seq++;
        }
        if (seq > PG_PARAMS_MAX)
            return -1;
        if (seq > max)
            max = seq;
        used[seq] = 1;
        n += (size_t)snprintf(out + n, cap - n, "$%d", seq);
    }
    out[n] = '\0';
    *nparams = max;
    return 0;
}

static void stmt_free(sdb_stmt *st)
{
    if (st->vals)
        for (int i = 0; i <= st->nparams; i++)
            free(st->vals[i]);
    free(st->vals);
    free(st->lens);
    free(st->fmts);
    free(st->types);
    free(st->used);
    PQfreemem(st->blob);
    free(st->tbuf);
    free(st->sql);
    free(st);
}

static int pg_prepare(sdb *db, const char *sql, sdb_stmt **out)
{
    /* "$65535" is at most 6 bytes where "?" was 1 */
    size_t cap = 6 * strlen(sql) + 64;
    sdb_stmt *st = calloc(1, sizeof(*st));
    unsigned char *used = calloc(PG_PARAMS_MAX + 1, 1);
    int rc = GPUFL_ENOMEM;

    *out = NULL;
    if (!st || !used)
        goto fail;
    st->db = db;
    st->rfmt = -1;
    st->sql = malloc(cap);
    if (!st->sql)
        goto fail;
    if (translate(sql, st->sql, cap, &st->nparams, used)) {
        rc = GPUFL_ETOOBIG;
        goto fail;
    }
    st->vals = calloc((size_t)st->nparams + 1, sizeof(*st->vals));
    st->lens = calloc((size_t)st->nparams + 1, sizeof(*st->lens));
    st->fmts = calloc((size_t)st->nparams + 1, sizeof(*st->fmts));
    st->types = calloc((size_t)st->nparams + 1, sizeof(*st->types));
    st->used = malloc((size_t)st->nparams + 1);
    if (!st->vals || !st->lens || !st->fmts || !st->types || !st->used)
        goto fail;
    memcpy(st->used, used, (size_t)st->nparams + 1);
    free(used);
    snprintf(st->name, sizeof(st->name), "g%u", db->nstmt++);
    *out = st;
    return GPUFL_OK;
fail:
    free(used);
    if (st)
        stmt_free(st);
    return rc;
}

void sdb_pg_reset(sdb_stmt *st)
{
    PQclear(st->res);
    st->res = NULL;
    st->executed = 0;
}

static void pg_finalize(sdb_stmt *st)
{
    sdb_pg_reset(st);
    /* one prepared on a connection since lost is gone with it */
    if (st->prepared && st->gen == st->db->gen && !st->db->lost &&
        PQstatus(st->db->c) == CONNECTION_OK && !sdb_pg_kept_put(st))
        sdb_pg_deallocate(st->db, st->name);
    stmt_free(st);
}

/* Parameter i's value v (owned from here), its type, and for a binary one
 * (fmt 1) its length. */
static void set_val(sdb_stmt *st, int i, char *v, Oid type, int len, int fmt)
{
    if (i < 1 || i > st->nparams) {
        free(v);
        return;
    }
    free(st->vals[i]);
    st->vals[i] = v;
    if (!v && type && !st->bind_rc)
        st->bind_rc = GPUFL_ENOMEM; /* a value (not pg_bind_null's) */
    st->lens[i] = len;
    st->fmts[i] = fmt;
    /* once prepared on the live connection the types are fixed on the
     * server (a later value is read as the type prepared): they stay, so
     * that sdb_pg_kept_put files the statement under what it was prepared with */
    if (type && !(st->prepared && st->gen == st->db->gen))
        st->types[i] = type;
}

static void pg_bind_i64(sdb_stmt *st, int i, int64_t v)
{
    char *s = malloc(24);
    if (s)
        snprintf(s, 24, "%lld", (long long)v);
    set_val(st, i, s, OID_INT8, 0, 0);
}

static void pg_bind_f64(sdb_stmt *st, int i, double v)
{
    char *s = malloc(32);
    if (s)
        snprintf(s, 32, "%.17g", v);
    set_val(st, i, s, OID_FLOAT8, 0, 0);
}

static void pg_bind_text(sdb_stmt *st, int i, const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0'; /* text cannot hold NUL: a \u0000 ends it here */
    }
    set_val(st, i, s, OID_TEXT, 0, 0);
}

static void pg_bind_blob(sdb_stmt *st, int i, const void *p, size_t n)
{
    /* binary: the bytes themselves (malloc(0) may be NULL, which would
     * send SQL NULL) */
    char *s = n <= (size_t)INT_MAX ? malloc(n ? n : 1) : NULL;
    if (s && n)
        memcpy(s, p, n);
    set_val(st, i, s, OID_BYTEA, (int)n, 1);
}

static void put_be32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
}

/* sdb_bind_arr: array_recv's header - dimensions (0 for an empty array,
 * which has no dimension to describe), flags (0: array_recv finds the
 * NULLs from their lengths), element type, then the one dimension's size
 * and lower bound 1 - and the elements as given. */
static void pg_bind_arr(sdb_stmt *st, int i, const void *p, size_t len,
                        size_t n, int elem)
{
    static const Oid el[4] = { 0, OID_INT8, OID_FLOAT8, OID_BYTEA };
    static const Oid arr[4] = { 0, OID_INT8_ARR, OID_FLOAT8_ARR,
                                OID_BYTEA_ARR };
    size_t h = n ? 20 : 12;
    char *s;

    if (elem < 1 || elem > 3 || len > (size_t)INT_MAX - h ||
        n > (size_t)INT_MAX) {
        /* the parameter NULL, the statement failing when run */
        set_val(st, i, NULL, 0, 0, 0);
        if (!st->bind_rc)
            st->bind_rc = elem < 1 || elem > 3 ? GPUFL_EINVAL : GPUFL_ETOOBIG;
        return;
    }
    if ((s = malloc(h + len)) != NULL) {
        put_be32(s, n ? 1 : 0);
        put_be32(s + 4, 0);
        put_be32(s + 8, el[elem]);
        if (n) {
            put_be32(s + 12, (uint32_t)n);
            put_be32(s + 16, 1);
        }
        if (len)
            memcpy(s + h, p, len);
    }
    set_val(st, i, s, arr[elem], (int)(h + len), 1);
}

static void pg_bind_null(sdb_stmt *st, int i)
{
    set_val(st, i, NULL, 0, 0, 0);
}

/* Whether a statement whose result was r may take its results in
 * binary: at least one blob, and every column a blob or an integer, the
 * types the accessors below decode (a text or double column keeps its
 * statement in text: their binary forms are not what the callers read). */
static int bin_ok(const PGresult *r)
{
    int blob = 0;

    for (int i = 0; i < PQnfields(r); i++) {
        Oid t = PQftype(r, i);
        if (t != OID_BYTEA && t != OID_INT8 && t != OID_INT4)
            return 0;
        blob |= t == OID_BYTEA;
    }
    return blob;
}

uint64_t sdb_pg_binary(const sdb *db)
{
    return db->bin_results;
}

/* A parameter the SQL never mentions still needs a type (before a
 * PREPARE, or sdb_pg_kept_take's comparison of types). */
void sdb_pg_default_types(sdb_stmt *st)
{
    for (int i = 1; i <= st->nparams; i++)
        if (!st->used[i] && !st->types[i])
            st->types[i] = OID_TEXT;
}

int sdb_pg_step(sdb_stmt *st)
{
    sdb *db = st->db;

    if (!st->executed) {
        PGresult *r;
        ExecStatusType s;
        int rc = sdb_pg_collect(db);
        if (!rc && st->bind_rc) {
            rc = st->bind_rc;
            st->bind_rc = 0;
        }
        if (!rc)
            rc = sdb_pg_ready(db);
        if (rc)
            return rc;
        if (!st->prepared || st->gen != db->gen) {
            sdb_pg_default_types(st);
            if (!sdb_pg_kept_take(st)) {
                r = PQprepare(db->c, st->name, st->sql, st->nparams,
                              st->types + 1);
                if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                    rc = sdb_pg_fail(db, r);
                    PQclear(r);
                    return rc;
                }
                PQclear(r);
            }
            st->prepared = 1;
            st->gen = db->gen;
        }
        st->res = PQexecPrepared(db->c, st->name, st->nparams,
                                 (const char *const *)(st->vals + 1),
                                 st->lens + 1, st->fmts + 1, st->rfmt == 1);
        s = PQresultStatus(st->res);
        if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
            rc = sdb_pg_fail(db, st->res);
            PQclear(st->res);
            st->res = NULL;
            return rc;
        }
        sdb_pg_after(db);
        {
            const char *ct = PQcmdTuples(st->res);
            db->changes = ct && *ct ? strtoll(ct, NULL, 10) : 0;
        }
        st->executed = 1;
        st->row = -1;
        st->nrows = s == PGRES_TUPLES_OK ? PQntuples(st->res) : 0;
        if (st->rfmt < 0 && s == PGRES_TUPLES_OK)
            st->rfmt = bin_ok(st->res);
        else if (st->rfmt == 1)
            db->bin_results++;
    }
    if (st->row + 1 < st->nrows) {
        st->row++;
        return SDB_ROW;
    }
    st->row = st->nrows;
    return SDB_DONE;
}

static const char *val(sdb_stmt *st, int i)
{
    if (!st->res || st->row < 0 || st->row >= st->nrows ||
        i >= PQnfields(st->res) || PQgetisnull(st->res, st->row, i))
        return NULL;
    return PQgetvalue(st->res, st->row, i);
}

/* Column i of a binary result (v its value): an integer's network-order
 * bytes, a blob's own (0 read as an integer, as its text would be). */
static int64_t bin_i64(const sdb_stmt *st, int i, const char *v)
{
    const unsigned char *u = (const unsigned char *)v;
    Oid t = PQftype(st->res, i);
    int len = PQgetlength(st->res, st->row, i);
    uint64_t x = 0;

    if ((t != OID_INT8 || len != 8) && (t != OID_INT4 || len != 4))
        return 0;
    for (int j = 0; j < len; j++)
        x = x << 8 | u[j];
    return len == 4 ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
}

static int64_t pg_col_i64(sdb_stmt *st, int i)
{
    const char *v = val(st, i);
    if (!v)
        return 0;
    return PQfformat(st->res, i) ? bin_i64(st, i, v) : strtoll(v, NULL, 10);
}

static double pg_col_f64(sdb_stmt *st, int i)
{
    const char *v = val(st, i);
    if (!v)
        return 0.0;
    return PQfformat(st->res, i) ? (double)bin_i64(st, i, v) : strtod(v, NULL);
}

static const char *pg_col_text(sdb_stmt *st, int i)
{
    const char *v = val(st, i);
    int nf;

    /* NULL, a text result's value, or a binary blob's bytes (libpq ends
     * every value with a NUL) */
    if (!v || !PQfformat(st->res, i) || PQftype(st->res, i) == OID_BYTEA)
        return v;
    /* a binary integer (bin_ok admits no other type) as its text, until
     * the next step */
    nf = PQnfields(st->res);
    if (!st->tbuf && !(st->tbuf = malloc((size_t)nf * 24)))
        return NULL;
    snprintf(st->tbuf + 24 * i, 24, "%lld", (long long)bin_i64(st, i, v));
    return st->tbuf + 24 * i;
}

static const void *pg_col_blob(sdb_stmt *st, int i, size_t *n)
{
    const char *v = val(st, i);
    size_t len = 0;

    *n = 0;
    PQfreemem(st->blob);
    st->blob = NULL;
    if (!v)
        return NULL;
    if (PQfformat(st->res, i)) {
        /* binary: the bytes themselves, held by the result until reset */
        *n = (size_t)PQgetlength(st->res, st->row, i);
        return v;
    }
    st->blob = PQunescapeBytea((const unsigned char *)v, &len);
    *n = st->blob ? len : 0;
    return st->blob;
}

static int pg_col_null(sdb_stmt *st, int i)
{
    return val(st, i) == NULL;
}

static int pg_copy(sdb *db, const char *sql, const char *data, size_t len)
{
    PGresult *r;
    int rc = sdb_pg_collect(db);

    if (!rc)
        rc = sdb_pg_ready(db);

    if (rc)
        return rc;
    r = PQexec(db->c, sql);

    if (PQresultStatus(r) != PGRES_COPY_IN) {
        rc = sdb_pg_fail(db, r);
        PQclear(r);
        return rc;
    }
    PQclear(r);
    if (len > (size_t)INT_MAX)
        rc = GPUFL_ETOOBIG;
    /* the whole buffer at once: libpq splits it into protocol messages */
    if (!rc && PQputCopyData(db->c, data, (int)len) != 1)
        rc = sdb_pg_fail(db, NULL);
    /* a failure still ends the COPY so the connection stays usable */
    if (PQputCopyEnd(db->c, rc ? "gpufl: copy failed" : NULL) != 1 && !rc)
        rc = sdb_pg_fail(db, NULL);
    while ((r = PQgetResult(db->c)) != NULL) {
        if (!rc && PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = sdb_pg_fail(db, r);
        PQclear(r);
    }
    sdb_pg_after(db);
    return rc;
}

const sdb_ops sdb_pg_ops = {
    pg_close,     pg_exec,     pg_errmsg,    pg_changes,   pg_prepare,
    pg_finalize,  pg_bind_i64, pg_bind_f64,  pg_bind_text, pg_bind_blob,
    pg_bind_null, sdb_pg_step, sdb_pg_reset, pg_col_i64,   pg_col_f64,
    pg_col_text,  pg_col_blob, pg_col_null,  pg_copy,      sdb_pg_send,
    pg_bind_arr,
};
