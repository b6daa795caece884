/*
 * run.c - the pipeline's loop: when to scan, which files get a turn, how
 * long to sleep.
 *
 * Files of one stream are read in order, so only the first unfinished file
 * of each stream (its "head") can have a turn.  The heads that are not
 * idle are kept in a list, and a round goes over that list only: a folder
 * of a thousand finished or idle files costs a round nothing.  An idle
 * head rejoins the list when inotify says it was written, and every head
 * is looked at again on the poll timer (the NFS fallback, and the net
 * under everything else: the list is rebuilt from the files then, and
 * after every scan).
 */
#include "agent/agent_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Nothing left to do in --once mode? */
static int drained(const agent_ctx *c)
{
    for (size_t i = 0; i < c->nfiles; i++) {
        const agent_file *f = c->files[i];
        if (agent_archive_pending(c, f))
            return 0;
        if (f->done)
            continue;
        if (!f->eof || f->bn || f->acked != f->consumed)
            return 0;
    }
    return 1;
}

/* An idle file on the poll timer: has anything changed?  One fstat. */
static int idle_woken(const agent_file *f)
{
    struct stat st;

    if (f->fd < 0)
        return 1; /* its open failed: try again */
    if (fstat(f->fd, &st))
        return 1;
    return (uint64_t)st.st_size != f->rbase + f->rlen;
}

/* Adds f to the list (once); 0, or -1 out of memory. */
static int act_push(agent_ctx *c, agent_file *f)
{
    if (f->in_act)
        return 0;
    if (c->nact == c->capact) {
        size_t cap = c->capact ? c->capact * 2 : 64;
        agent_file **g = realloc(c->act, cap * sizeof *g);
        if (!g)
            return -1;
        c->act = g;
        c->capact = cap;
    }
    c->act[c->nact++] = f;
    f->in_act = 1;
    return 0;
}

/* Is f the first unfinished file of its stream? */
static int is_head(const agent_ctx *c, const agent_file *f)
{
    for (size_t i = f->pos; i-- > 0;) {
        const agent_file *g = c->files[i];
        if (g->k != f->k)
            break;
        if (!g->done && !g->gone)
            return 0;
    }
    return !f->done && !f->gone;
}

void agent_run_wake(agent_ctx *c, agent_file *f)
{
    if (!f->in_act && f->pos < c->nfiles && c->files[f->pos] == f &&
        is_head(c, f))
        act_push(c, f);
}

/* Is it time to look at f though it is idle? */
static int visit_due(const agent_ctx *c, const agent_file *f, int fast,
                     int slow)
{
    return slow || (fast && c->remote[f->folder]);
}

/* The list again from the files: every head, and the idle ones whose
 * visit is due.  Returns -1 when it cannot be made. */
static int act_rebuild(agent_ctx *c, int fast, int slow)
{
    const agent_key *last = NULL;

    /* the old list may name files a scan has freed since: not read */
    c->nact = 0;
    for (size_t i = 0; i < c->nfiles; i++)
        c->files[i]->in_act = 0;
    for (size_t i = 0; i < c->nfiles; i++) {
        agent_file *f = c->files[i];
        f->pos = i;
        if (f->done || f->gone || f->k == last)
            continue;
        last = f->k;
        if ((!f->idle || f->dirty || visit_due(c, f, fast, slow)) &&
            act_push(c, f))
            return -1;
    }
    c->act_gen = c->files_gen;
    return 0;
}

/* One round over the heads; returns 1 if anything moved.  fast: the
 * remote folders' idle files are due a visit; slow: all of them. */
static int round_files(agent_ctx *c, int fast, int slow)
{
    int moved = 0;
    size_t nzst = SIZE_MAX, keep = 0; /* counted when a .zst is to open */

    if ((fast || slow || c->act_gen != c->files_gen) &&
        act_rebuild(c, fast, slow))
        return 0;
    for (size_t i = 0; i < c->nact && !*c->stop; i++) {
        agent_file *f = c->act[i];
        int fm;

        if (f->done || f->gone)
            goto drop;
        if (f->idle) {
            if (!f->dirty && !(visit_due(c, f, fast, slow) && idle_woken(f)))
                goto drop;
            f->idle = 0;
        }
        /* memory stays bounded whatever the number of files: no new batch
         * while AGENT_HELD_MAX wait to be sent (a sink down), no more than
         * AGENT_ZST_MAX decompressors at once */
        if (f->bn == 0 && c->nheld >= AGENT_HELD_MAX)
            goto next;
        if (f->fd < 0 && f->zst) {
            if (nzst == SIZE_MAX) {
                nzst = 0;
                for (size_t j = 0; j < c->nfiles; j++)
                    nzst += c->files[j]->fd >= 0 && c->files[j]->rd_zst;
            }
            if (nzst >= AGENT_ZST_MAX)
                goto next;
        }
        f->dirty = 0;
        fm = agent_turn(c, f);
        if (nzst != SIZE_MAX && f->fd >= 0 && f->rd_zst && fm)
            nzst++;
        moved |= fm;
        if (f->done || f->gone) {
            /* the stream's next file is its head now: it takes its turn
             * in this round */
            size_t j = f->pos + 1;
            if (j < c->nfiles && c->files[j]->k == f->k)
                agent_run_wake(c, c->files[j]);
            goto drop;
        }
        if (f->idle)
            goto drop;
    next:
        c->act[keep++] = f;
        continue;
    drop:
        f->in_act = 0;
    }
    c->nact = keep;
    return moved;
}

int agent_run(agent_ctx *c)
{
    const agent_cfg *cfg = c->cfg;
    int first = 1;

    uint64_t slow_ms = AGENT_IDLE_SLOW * cfg->poll_ms;
    /* rescans: names change under inotify's eyes in local folders */
    uint64_t rescan_ms = c->any_remote ? 2 * cfg->poll_ms : slow_ms;

    c->stats_ms = agent_now_ms();
    c->polled_ms = c->polled_slow_ms = c->stats_ms;
    for (;;) {
        uint64_t now = agent_now_ms(), wait;
        int moved = 0, fast, slow;

        if (first || (c->scan_needed && now - c->scanned_ms >= 100) ||
            now - c->scanned_ms >= rescan_ms) {
            agent_scan(c);
            first = 0;
        }
        fast = c->any_remote && now - c->polled_ms >= cfg->poll_ms;
        slow = c->visit_all || now - c->polled_slow_ms >= slow_ms;
        if (fast || slow) {
            c->polled_ms = now;
            c->visit_all = 0;
        }
        if (slow)
            c->polled_slow_ms = now;
        moved |= round_files(c, fast, slow);
        moved |= agent_archive_step(c);
        agent_cursor_commit(c, 0);
        if (cfg->stats_s && now - c->stats_ms >= cfg->stats_s * 1000) {
            agent_stats_line(c);
            c->stats_ms = now;
        }
        if (*c->stop)
            break;
        if (cfg->once && drained(c) && !c->scan_needed)
            break;
        if (moved)
            continue;
        now = agent_now_ms();
        wait = c->polled_slow_ms + slow_ms > now
                   ? c->polled_slow_ms + slow_ms - now
                   : 0;
        if (c->any_remote) {
            uint64_t due = c->polled_ms + cfg->poll_ms;
            uint64_t w = due > now ? due - now : 0;
            if (w < wait)
                wait = w;
        }
        if (c->scanned_ms + rescan_ms > now &&
            c->scanned_ms + rescan_ms - now < wait)
            wait = c->scanned_ms + rescan_ms - now;
        if (c->backoff_until_ms > now && c->backoff_until_ms - now < wait)
            wait = c->backoff_until_ms - now;
        /* a file with a batch is a head that is not idle: in the list */
        for (size_t i = 0; c->nheld && i < c->nact; i++) {
            agent_file *f = c->act[i];
            if (f->bn && c->backoff_until_ms <= now) {
                uint64_t due = f->bfirst_ms + cfg->linger_ms;
                uint64_t w = due > now ? due - now : 0;
                if (w < wait)
                    wait = w;
            }
        }
        if (c->scan_needed && wait > 100)
            wait = 100;
        if (cfg->once && c->cursor_dirty)
            wait = 0;
        if (wait)
            agent_watch_wait(c, wait);
    }
    agent_cursor_commit(c, 1);
    return 0;
}
