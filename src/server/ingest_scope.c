/*
 * ingest_scope.c - which lines of a parsed batch its key may write: a key
 * bound to hosts writes only sessions of those hosts (and so only their
 * idle verdicts, which belong to the session that carries them), and no
 * key writes a stream past its session_end line.
 *
 * A session's host is the one its stored session line named, else the one
 * a session line in this batch names (the agent sends each stream's
 * session line first).  A stream's end is the lowest seq of a session_end
 * line stored or in this batch.  The check reads the store once per
 * session in the batch before the batch is stored; two batches racing for
 * one new session are not ordered against each other (the agent sends one
 * stream's batches one after another).
 */
#include "ingest.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One session of the batch. */
typedef struct scope_sess {
    char sid[sizeof(((srv_ev *)0)->sid)]; /* copied: the batch is compacted */
    srv_sess_policy p;
    const char *host; /* the effective host, NULL: not known */
    size_t host_n;
    uint64_t end[SRV_ST_N]; /* UINT64_MAX: not ended */
    /* the highest seq + 1 of a line kept so far (0: none; a streamed
     * body's earlier parts, already given to the store) */
    uint64_t kept_hi[SRV_ST_N];
} scope_sess;

typedef struct scope_map {
    scope_sess *e;
    uint32_t *slot; /* index + 1 into e; 0: empty */
    size_t n, cap, nslot;
} scope_map;

static uint32_t hash_sid(const char *sid)
{
    uint32_t h = 2166136261u;
    for (; *sid; sid++)
        h = (h ^ (unsigned char)*sid) * 16777619u;
    return h;
}

static scope_sess *find(scope_map *m, const char *sid, int add)
{
    size_t i = hash_sid(sid) & (m->nslot - 1);

    for (;; i = (i + 1) & (m->nslot - 1)) {
        uint32_t k = m->slot[i];
        if (!k)
            break;
        if (strcmp(m->e[k - 1].sid, sid) == 0)
            return &m->e[k - 1];
    }
    if (!add || m->n == m->cap)
        return NULL;
    memset(&m->e[m->n], 0, sizeof(m->e[m->n]));
    snprintf(m->e[m->n].sid, sizeof(m->e[m->n].sid), "%s", sid);
    m->slot[i] = (uint32_t)++m->n;
    return &m->e[m->n - 1];
}

/* find() for a batch's lines, which come mostly from one session: the
 * last one found is compared first (the sids are validated UUIDs, 36
 * characters and a NUL). */
static scope_sess *find_memo(scope_map *m, scope_sess **last, const char *sid)
{
    if (*last && memcmp((*last)->sid, sid, 37) == 0)
        return *last;
    if ((*last = find(m, sid, 0)) != NULL)
        return *last;
    return NULL;
}

struct srv_scope {
    scope_map m;
    scope_sess *last;
};

int srv_scope_new(size_t cap, srv_scope **out)
{
    srv_scope *sc = calloc(1, sizeof(*sc));

    *out = NULL;
    if (!sc)
        return GPUFL_ENOMEM;
    sc->m.cap = cap;
    sc->m.nslot = 16;
    while (sc->m.nslot < 2 * sc->m.cap)
        sc->m.nslot *= 2;
    sc->m.e = malloc(sc->m.cap * sizeof(*sc->m.e) + 1);
    sc->m.slot = calloc(sc->m.nslot, sizeof(*sc->m.slot));
    if (!sc->m.e || !sc->m.slot) {
        srv_scope_free(sc);
        return GPUFL_ENOMEM;
    }
    *out = sc;
    return GPUFL_OK;
}

void srv_scope_free(srv_scope *sc)
{
    if (!sc)
        return;
    free(sc->m.e);
    free(sc->m.slot);
    free(sc);
}

int srv_scope_part(srv *s, srv_scope *sc, const char *hosts, srv_ev *ev,
                   size_t *n, int part, srv_scope_reject_fn fn, void *ctx)
{
    scope_map *m = &sc->m;
    size_t kept = 0;

    /* the sessions: what is stored, then what this batch says */
    for (size_t i = 0; i < *n; i++) {
        scope_sess *ss = find_memo(m, &sc->last, ev[i].sid);
        if (!ss) {
            int rc;
            if (!(ss = sc->last = find(m, ev[i].sid, 1)))
                return GPUFL_EFULL; /* more sessions than lines */
            if ((rc = srv_store_sess_policy(s->store, ss->sid, &ss->p)) != 0)
                return rc;
            for (int k = 0; k < SRV_ST_N; k++)
                ss->end[k] =
                    (ss->p.ended & (1u << k)) ? ss->p.end_seq[k] : UINT64_MAX;
            if (ss->p.host[0]) {
                ss->host = ss->p.host;
                ss->host_n = strlen(ss->p.host);
            }
        }
        if (ev[i].type == EV_SESSION && !ss->host) {
            ss->host = ev[i].host.p ? ev[i].host.p : "";
            ss->host_n = ev[i].host.n;
        }
        if (ev[i].type == EV_SESSION_END && ev[i].seq < ss->end[ev[i].st]) {
            /* a part: an earlier part kept a line past this end */
            if (part && ss->kept_hi[ev[i].st] > ev[i].seq + 1)
                return GPUFL_ECONFLICT;
            ss->end[ev[i].st] = ev[i].seq;
        }
    }
    for (size_t i = 0; i < *n; i++) {
        srv_ev *e = &ev[i];
        scope_sess *ss = find_memo(m, &sc->last, e->sid);
        /* a session line names its own host, which must be allowed too */
        const char *h =
            e->type == EV_SESSION && e->host.p ? e->host.p : ss->host;
        size_t hn = e->type == EV_SESSION && e->host.p ? e->host.n : ss->host_n;
        char why[INGEST_REASON_MAX];

        if (hosts[0] && !h) {
            /* a part: a later part may hold the session line */
            if (part)
                return GPUFL_ECONFLICT;
            snprintf(why, sizeof(why),
                     "the session's host is not known yet (its session line "
                     "comes first) and this key is bound to hosts");
        } else if (hosts[0] && (!srv_key_host_ok(hosts, ss->host, ss->host_n) ||
                                !srv_key_host_ok(hosts, h, hn))) {
            snprintf(why, sizeof(why),
                     "the session is host '%.*s''s; this key writes for %s",
                     (int)(hn > 48 ? 48 : hn), h, hosts);
        } else if (e->seq > ss->end[e->st]) {
            snprintf(why, sizeof(why),
                     "past the end of its stream (session_end at seq %llu)",
                     (unsigned long long)ss->end[e->st]);
        } else {
            if (e->seq >= ss->kept_hi[e->st])
                ss->kept_hi[e->st] = e->seq + 1;
            if (kept != i) /* an event is ~800 bytes: no copy onto itself */
                ev[kept] = *e;
            kept++;
            continue;
        }
        fn(ctx, e->line, why);
    }
    *n = kept;
    return GPUFL_OK;
}

int srv_ingest_scope(srv *s, const char *hosts, srv_ev *ev, size_t *n,
                     srv_scope_reject_fn fn, void *ctx)
{
    srv_scope *sc;
    int rc = srv_scope_new(*n, &sc);

    if (rc)
        return rc;
    rc = srv_scope_part(s, sc, hosts, ev, n, 0, fn, ctx);
    srv_scope_free(sc);
    return rc;
}
