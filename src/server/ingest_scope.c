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

int srv_ingest_scope(srv *s, const char *hosts, srv_ev *ev, size_t *n,
                     srv_scope_reject_fn fn, void *ctx)
{
    scope_map m;
    scope_sess *last = NULL;
    size_t kept = 0;
    int rc = GPUFL_OK;

    memset(&m, 0, sizeof(m));
    m.cap = *n;
    m.nslot = 16;
    while (m.nslot < 2 * m.cap)
        m.nslot *= 2;
    m.e = malloc(m.cap * sizeof(*m.e) + 1);
    m.slot = calloc(m.nslot, sizeof(*m.slot));
    if (!m.e || !m.slot) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    /* the sessions: what is stored, then what this batch says */
    for (size_t i = 0; i < *n; i++) {
        scope_sess *ss = find_memo(&m, &last, ev[i].sid);
        if (!ss) {
            ss = last = find(&m, ev[i].sid, 1);
            if ((rc = srv_store_sess_policy(s->store, ss->sid, &ss->p)) != 0)
                goto out;
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
        if (ev[i].type == EV_SESSION_END && ev[i].seq < ss->end[ev[i].st])
            ss->end[ev[i].st] = ev[i].seq;
    }
    for (size_t i = 0; i < *n; i++) {
        srv_ev *e = &ev[i];
        scope_sess *ss = find_memo(&m, &last, e->sid);
        /* a session line names its own host, which must be allowed too */
        const char *h =
            e->type == EV_SESSION && e->host.p ? e->host.p : ss->host;
        size_t hn = e->type == EV_SESSION && e->host.p ? e->host.n : ss->host_n;
        char why[INGEST_REASON_MAX];

        if (hosts[0] && !h) {
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
            if (kept != i) /* an event is ~800 bytes: no copy onto itself */
                ev[kept] = *e;
            kept++;
            continue;
        }
        fn(ctx, e->line, why);
    }
    *n = kept;
out:
    free(m.e);
    free(m.slot);
    return rc;
}
