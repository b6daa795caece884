/*
 * store_sql_kblocks_par.c - the kernel blocks of an ingest batch encoded
 * on two cores: the connection thread and ingest_par's helper (idle while
 * the store runs) take the blocks of a wave one after another, each with
 * its own encoder, into their own part of one arena.  The caller writes
 * the wave's kxrow rows meanwhile and then the blocks, in order, in the
 * batch's transaction, so the rows and bytes are those one thread gives
 * (the encoder is a pure function of its events) and commit before the
 * answer, idempotency and kill -9 are untouched.  Encoding was a fifth
 * of the store's instructions (docs/server.md, "h-liteing").
 *
 * The helper busy (another connection's body) or absent: the connection
 * thread encodes the wave alone.  Memory is fixed: an arena of KBP_ARENA
 * bytes and, with a helper, its encoder, allocated on first use.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "ingest_par.h"
#include "kblock.h"

/* A wave: at most KBP_WAVE blocks whose bounds fit in KBP_ARENA (at least
 * four of the largest ingest writes). */
#define KBP_WAVE 64
#define KBP_ARENA (4 * KB_BLOCK_BOUND(SQ_KB_RUN))

struct sq_kbp {
    kblock_enc *enc2;     /* the helper's encoder (who 1) */
    unsigned char *arena; /* KBP_ARENA */
    /* the wave: blk[0..n) of ev, block i into arena + off[i] */
    const kblock_ev *ev;
    const sq_kb_blk *blk;
    size_t n, posted;
    size_t off[KBP_WAVE + 1], len[KBP_WAVE];
    int bad[KBP_WAVE];
    char why[KBP_WAVE][96];
};

static int kbp_state(srv_store *s, sq_kbp **out)
{
    sq_kbp *p = s->kbp;

    if (!s->kb_enc && !(s->kb_enc = kblock_enc_new()))
        return GPUFL_ENOMEM;
    if (!p) {
        if (!(p = calloc(1, sizeof(*p))))
            return GPUFL_ENOMEM;
        s->kbp = p;
        p->arena = malloc(KBP_ARENA);
    }
    /* the helper's encoder only where there is a helper (without it, one
     * thread encodes) */
    if (s->par && !p->enc2)
        p->enc2 = kblock_enc_new();
    if (!p->arena)
        return GPUFL_ENOMEM;
    *out = p;
    return GPUFL_OK;
}

void sq_kbp_release(srv_store *s)
{
    sq_kbp *p = s->kbp;

    if (!p)
        return;
    kblock_enc_free(p->enc2);
    free(p->arena);
    free(p);
    s->kbp = NULL;
}

void srv_store_set_par(srv_store *s, struct ingest_par *par)
{
    pthread_mutex_lock(&s->wlock);
    s->par = par;
    pthread_mutex_unlock(&s->wlock);
}

/* Block i of the wave, by who's encoder (ingest_par_fn). */
static void encode_one(void *ctx, size_t i, int who)
{
    srv_store *s = ctx;
    sq_kbp *p = s->kbp;
    const sq_kb_blk *b = &p->blk[i];

    p->bad[i] = kblock_encode(who ? p->enc2 : s->kb_enc, p->ev + b->off, b->n,
                              KB_ZLEVEL, KB_OPT_DEFAULT, p->arena + p->off[i],
                              p->off[i + 1] - p->off[i], &p->len[i], p->why[i],
                              sizeof(p->why[i]));
}

int sq_kbp_begin(srv_store *s, const kblock_ev *ev, const sq_kb_blk *blk,
                 size_t nb, size_t *w)
{
    sq_kbp *p = NULL;
    size_t n = 0, at = 0;
    int rc;

    *w = 0;
    if ((rc = kbp_state(s, &p)) != 0)
        return rc;
    while (n < nb && n < KBP_WAVE &&
           KBP_ARENA - at >= KB_BLOCK_BOUND(blk[n].n)) {
        p->off[n] = at;
        at += KB_BLOCK_BOUND(blk[n].n);
        n++;
    }
    p->off[n] = at;
    p->ev = ev;
    p->blk = blk;
    p->n = n;
    p->posted = p->enc2 && ingest_par_post(s->par, n, encode_one, s);
    *w = n;
    return GPUFL_OK;
}

int sq_kbp_end(srv_store *s)
{
    sq_kbp *p = s->kbp;

    if (p->posted)
        ingest_par_join(s->par);
    else
        for (size_t i = 0; i < p->n; i++)
            encode_one(s, i, 0);
    p->posted = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->bad[i]) {
            glog_error("kblocks", "session %lld: cannot encode: %s",
                       (long long)p->blk[i].sess, p->why[i]);
            return GPUFL_EINTERNAL;
        }
    return GPUFL_OK;
}

const unsigned char *sq_kbp_block(srv_store *s, size_t i, size_t *len)
{
    *len = s->kbp->len[i];
    return s->kbp->arena + s->kbp->off[i];
}
