/*
 * ship.c - the pipeline: read lines, check them, batch them per file, send
 * a batch, and move the cursor only past what the sink acknowledged.
 *
 * Invariants:
 *   - f->acked <= f->consumed: acked is what the cursor may say; consumed
 *     is how far lines have been taken into the batch or dead-lettered.
 *   - a batch holds lines of one file only, so one offset commits it;
 *   - a partial last line is never consumed until its '\n' arrives, unless
 *     the file is final (renamed or compressed), when it is checked like
 *     any line (and, being cut, dead-lettered);
 *   - a failed send changes nothing but the backoff: the batch is kept and
 *     retried, whatever the delay; nothing is ever dropped.
 */
#include "agent/agent_int.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int batch_reserve(agent_file *f, size_t bytes)
{
    if (f->blen + bytes > f->bcap) {
        size_t cap = f->bcap ? f->bcap : 65536;
        char *g;
        while (cap < f->blen + bytes)
            cap *= 2;
        g = realloc(f->bbuf, cap);
        if (!g)
            return -1;
        f->bbuf = g;
        f->bcap = cap;
    }
    if (f->bn == f->bcapn) {
        uint32_t n = f->bcapn ? f->bcapn * 2 : 1024;
        uint32_t *e = realloc(f->bend, n * sizeof *e);
        uint64_t *o;
        if (!e)
            return -1;
        f->bend = e;
        o = realloc(f->bfoff, n * sizeof *o);
        if (!o)
            return -1;
        f->bfoff = o;
        f->bcapn = n;
    }
    return 0;
}

static int batch_full(const agent_ctx *c, const agent_file *f)
{
    return f->bn >= c->cfg->batch_lines || f->blen >= c->cfg->batch_bytes;
}

/* Checks one complete line and takes it: into the batch, or aside.
 * Returns -1 (nothing taken) when the batch cannot grow. */
static int take_line(agent_ctx *c, agent_file *f, const char *raw,
                     size_t raw_len, const char *line, size_t n,
                     uint64_t end_off)
{
    uint64_t start = end_off - raw_len;
    jsonl_doc d;
    int rc;

    c->st.read_lines++;
    c->st.read_bytes += raw_len;
    f->consumed = end_off;
    if (n == 0)
        return 0; /* blank lines carry nothing */
    if (n > c->cfg->max_line_bytes) {
        char r[96];
        int k = snprintf(r, sizeof r, "line over %llu bytes",
                         (unsigned long long)c->cfg->max_line_bytes);
        agent_dead_put(c, f, start, line, n, n, r, (size_t)k);
        return 0;
    }
    jsonl_doc_init(&d, c->tok, AGENT_TOKENS);
    rc = jsonl_doc_parse_obj(&d, line, n);
    if (rc == GPUFL_ETOOBIG) {
        if (!c->tok_big)
            c->tok_big = malloc(AGENT_TOKENS_BIG * sizeof *c->tok_big);
        if (c->tok_big) {
            jsonl_doc_init(&d, c->tok_big, AGENT_TOKENS_BIG);
            rc = jsonl_doc_parse_obj(&d, line, n);
        }
        /* too big to check here: the receiver will */
        if (rc == GPUFL_ETOOBIG)
            rc = 0;
    }
    if (rc) {
        char r[160];
        int k = snprintf(r, sizeof r, "malformed JSON at byte %zu: %s",
                         d.err_off, d.err ? d.err : "?");
        agent_dead_put(c, f, start, line, n, n, r, (size_t)k);
        return 0;
    }
    if (!f->sid[0] && d.n) {
        uint32_t t = jsonl_doc_find(&d, "sid");
        size_t sl;
        if (jsonl_tok_str(&d, t, f->sid, sizeof f->sid, &sl))
            f->sid[0] = '\0';
    }
    if (batch_reserve(f, raw_len + 1)) {
        /* out of memory: leave the line for later, unconsumed */
        f->consumed = start;
        c->st.read_lines--;
        c->st.read_bytes -= raw_len;
        return -1;
    }
    memcpy(f->bbuf + f->blen, raw, raw_len);
    f->blen += raw_len;
    if (raw[raw_len - 1] != '\n') /* the last line of a final file */
        f->bbuf[f->blen++] = '\n';
    if (f->bn == 0)
        f->bfirst_ms = agent_now_ms();
    f->bend[f->bn] = (uint32_t)f->blen;
    f->bfoff[f->bn] = end_off;
    f->bn++;
    return 0;
}

/*
 * A live file that shrank below what was read, or whose head changed, was
 * truncated (copytruncate, or a new file on a recycled inode): start it
 * over.  Lines of the old content not yet acknowledged are gone from disk
 * and cannot be shipped; the batch holding them is dropped with a count.
 */
static int truncated(agent_ctx *c, agent_file *f)
{
    struct stat st;
    unsigned char head[CURSOR_FP_MAX];
    ssize_t n = 0;

    if (fstat(f->fd, &st))
        return 0;
    if ((uint64_t)st.st_size >= f->rbase + f->rlen) {
        if (!f->head_len)
            return 0;
        n = pread(f->fd, head, f->head_len, 0);
        if (n < 0 ||
            (n == (ssize_t)f->head_len && !memcmp(head, f->head, f->head_len)))
            return 0;
    }
    fprintf(stderr,
            "gpufl-agent: %s was truncated or replaced; reading it again "
            "from the start\n",
            f->path);
    c->st.truncations++;
    f->rbase = f->rlen = f->rpos = 0;
    f->acked = f->consumed = 0;
    f->bn = 0;
    f->blen = 0;
    f->head_len = 0;
    f->sid[0] = '\0';
    f->skipping = 0;
    f->size = (uint64_t)st.st_size;
    f->eof = 0;
    c->cursor_dirty = 1;
    return 1;
}

/* Reads and takes lines until the batch is full or the data ends.
 * Returns 1 if anything moved. */
static int pump(agent_ctx *c, agent_file *f)
{
    int moved = 0;

    if (f->fd < 0) {
        if (agent_file_open(f)) {
            c->scan_needed = 1;
            return 0;
        }
    }
    while (!batch_full(c, f)) {
        size_t pos = f->rpos, n;
        const char *line;
        long r;

        if (f->skipping) {
            char *nl = memchr(f->rbuf + f->rpos, '\n', f->rlen - f->rpos);
            if (nl) {
                f->rpos = (size_t)(nl - f->rbuf) + 1;
                f->skipping = 0;
                f->consumed = f->rbase + f->rpos;
                moved = 1;
                continue;
            }
            f->rpos = f->rlen;
        } else if (jsonl_line_next(f->rbuf, f->rlen, &pos, &line, &n)) {
            const char *raw = f->rbuf + f->rpos;
            size_t raw_len = pos - f->rpos;
            if (take_line(c, f, raw, raw_len, line, n, f->rbase + pos))
                break; /* out of memory: send what there is first */
            f->rpos = pos;
            moved = 1;
            continue;
        } else if (f->rlen - f->rpos > c->cfg->max_line_bytes) {
            /* a line over the cap without its end yet: set it aside now
             * and drop the rest of it as it arrives */
            char rs[96];
            int k = snprintf(rs, sizeof rs, "line over %llu bytes",
                             (unsigned long long)c->cfg->max_line_bytes);
            agent_dead_put(c, f, f->rbase + f->rpos, f->rbuf + f->rpos,
                           f->rlen - f->rpos, f->rlen - f->rpos, rs, (size_t)k);
            c->st.read_lines++;
            f->skipping = 1;
            f->rpos = f->rlen;
            moved = 1;
            continue;
        }
        if (f->eof && !f->rd_zst && !f->final && truncated(c, f))
            continue;
        r = agent_file_fill(c, f);
        if (r > 0) {
            f->eof = 0;
            continue;
        }
        if (r < 0) {
            fprintf(stderr,
                    "gpufl-agent: cannot read %s (corrupt or unreadable); "
                    "the rest of it is skipped\n",
                    f->path);
            f->final = 1;
            f->rpos = f->rlen;
            f->consumed = f->rbase + f->rlen;
        }
        if (!f->rd_zst && f->rbase + f->rlen > f->size)
            f->size = f->rbase + f->rlen;
        if (!f->final && agent_file_rotated(f)) {
            /* renamed after a flush: one more read gets its last bytes */
            f->final = 1;
            continue;
        }
        if (f->final && f->rlen > f->rpos) {
            /* the cut last line of a final file */
            pos = f->rpos;
            if (!f->skipping &&
                jsonl_line_tail(f->rbuf, f->rlen, &pos, &line, &n)) {
                const char *raw = f->rbuf + f->rpos;
                size_t raw_len = pos - f->rpos;
                if (take_line(c, f, raw, raw_len, line, n, f->rbase + pos))
                    break;
                f->rpos = pos;
            } else {
                f->rpos = f->rlen;
                f->consumed = f->rbase + f->rlen;
            }
            moved = 1;
        } else if (f->skipping && f->final) {
            f->consumed = f->rbase + f->rlen;
        }
        f->eof = 1;
        break;
    }
    return moved;
}

static void on_reject(void *ctx, uint32_t i, const char *reason, size_t len)
{
    void **p = ctx;
    agent_ctx *c = p[0];
    agent_file *f = p[1];
    uint32_t start = i ? f->bend[i - 1] : 0;
    uint32_t n = f->bend[i] - start;
    uint64_t off = f->bfoff[i] - n;

    agent_dead_put(c, f, off, f->bbuf + start, n - 1, n - 1, reason, len);
    (*(uint64_t *)p[2])++;
}

/* Sends f's batch if it is due; returns 1 if it was acknowledged. */
static int maybe_send(agent_ctx *c, agent_file *f, uint64_t now)
{
    agent_batch b;
    agent_send_rc rc;
    char why[512];
    uint64_t rejected = 0;
    void *ctx[3];

    if (f->bn == 0 || now < c->backoff_until_ms)
        return 0;
    if (!batch_full(c, f) && !(f->eof && (c->cfg->once || f->final)) &&
        now - f->bfirst_ms < c->cfg->linger_ms)
        return 0;
    b.stream = f->stream;
    b.sid = f->sid;
    b.buf = f->bbuf;
    b.len = f->blen;
    b.n = f->bn;
    b.end = f->bend;
    ctx[0] = c;
    ctx[1] = f;
    ctx[2] = &rejected;
    why[0] = '\0';
    c->st.requests++;
    c->st.sent_lines += f->bn;
    rc = agent_sink_send(c->sink, &b, on_reject, ctx, why, sizeof why);
    if (rc == AGENT_SEND_OK) {
        c->st.acked_lines += f->bn - rejected;
        f->acked = f->consumed;
        f->bn = 0;
        f->blen = 0;
        c->cursor_dirty = 1;
        if (c->backoff_ms)
            fprintf(stderr, "gpufl-agent: sink is back; shipping resumed\n");
        c->backoff_ms = 0;
        return 1;
    }
    c->st.retried++;
    if (rc == AGENT_SEND_CONFIG) {
        c->backoff_ms = c->cfg->retry_max_ms;
    } else {
        c->backoff_ms =
            c->backoff_ms ? c->backoff_ms * 2 : c->cfg->retry_min_ms;
        if (c->backoff_ms > c->cfg->retry_max_ms)
            c->backoff_ms = c->cfg->retry_max_ms;
    }
    {
        /* full jitter over the upper half: agents restarted together do
         * not retry together */
        uint64_t half = c->backoff_ms / 2;
        uint64_t d = half + (uint64_t)random() % (half + 1);
        c->backoff_until_ms = agent_now_ms() + d;
        fprintf(stderr,
                "gpufl-agent: %s send of %u %s lines failed: %s; retry in "
                "%llu ms (nothing is dropped)\n",
                c->sink->ops->name, f->bn, agent_stream_names[f->stream], why,
                (unsigned long long)d);
    }
    return 0;
}

void agent_cursor_commit(agent_ctx *c, int force)
{
    uint64_t now = agent_now_ms();
    agent_centry *e;
    size_t n = 0;

    if (!c->cursor_dirty)
        return;
    if (!force && now - c->cursor_saved_ms < c->cfg->cursor_sync_ms)
        return;
    e = malloc((c->nfiles + 1) * sizeof *e);
    if (!e)
        return;
    for (size_t i = 0; i < c->nfiles; i++) {
        agent_file *f = c->files[i];
        if ((!f->acked && !f->done) || !f->head_len)
            continue;
        e[n].fp = agent_fp(f->head, f->head_len);
        e[n].fp_len = f->head_len;
        e[n].dev = f->dev;
        e[n].ino = f->ino;
        e[n].off = f->acked;
        e[n].flags = (f->done ? CURSOR_F_DONE : 0) |
                     (f->archived ? CURSOR_F_ARCHIVED : 0);
        snprintf(e[n].name, sizeof e[n].name, "%s", f->name);
        n++;
    }
    /* dead letters first: the cursor must not pass lines not yet kept */
    agent_dead_sync(c);
    if (agent_cursor_save(c->cfg->cursor_file, e, n) == 0) {
        c->cursor_dirty = 0;
        c->cursor_saved_ms = now;
    } else {
        fprintf(stderr, "gpufl-agent: cannot write cursor %s: %m\n",
                c->cfg->cursor_file);
    }
    free(e);
}

/* Settles a file with nothing in flight: commit dropped lines, finish. */
static void settle(agent_ctx *c, agent_file *f)
{
    if (f->bn)
        return;
    if (f->acked < f->consumed) {
        f->acked = f->consumed;
        c->cursor_dirty = 1;
    }
    if (f->final && f->eof && f->rpos == f->rlen && !f->done) {
        f->done = 1;
        c->cursor_dirty = 1;
        agent_file_close(f);
        free(f->bbuf);
        f->bbuf = NULL;
        f->blen = f->bcap = 0;
    }
}

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

int agent_run(agent_ctx *c)
{
    const agent_cfg *cfg = c->cfg;
    int first = 1;

    c->stats_ms = agent_now_ms();
    for (;;) {
        uint64_t now = agent_now_ms(), wait;
        int moved = 0;
        const char *last_key = NULL;
        int last_folder = -1;

        if (first || (c->scan_needed && now - c->scanned_ms >= 100) ||
            now - c->scanned_ms >= 2 * cfg->poll_ms) {
            agent_scan(c);
            first = 0;
        }
        for (size_t i = 0; i < c->nfiles && !*c->stop; i++) {
            agent_file *f = c->files[i];
            if (f->done)
                continue;
            /* one file per stream of a session at a time, oldest first */
            if (last_key && f->folder == last_folder &&
                !strcmp(last_key, f->key))
                continue;
            last_key = f->key;
            last_folder = f->folder;
            moved |= pump(c, f);
            moved |= maybe_send(c, f, agent_now_ms());
            settle(c, f);
        }
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
        wait = cfg->poll_ms;
        now = agent_now_ms();
        if (c->backoff_until_ms > now && c->backoff_until_ms - now < wait)
            wait = c->backoff_until_ms - now;
        for (size_t i = 0; i < c->nfiles; i++) {
            agent_file *f = c->files[i];
            if (f->bn && c->backoff_until_ms <= now) {
                uint64_t due = f->bfirst_ms + cfg->linger_ms;
                uint64_t w = due > now ? due - now : 0;
                if (w < wait)
                    wait = w;
            }
        }
        if (cfg->once && c->cursor_dirty)
            wait = 0;
        if (wait)
            agent_watch_wait(c, wait);
    }
    agent_cursor_commit(c, 1);
    return 0;
}
