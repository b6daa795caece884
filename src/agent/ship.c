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
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int batch_reserve(agent_ctx *c, agent_file *f, size_t bytes)
{
    agent_batch_unpark(c, f);
    if (gbuf_grow(&f->batch, bytes)) {
        f->batch.err = 0; /* nothing was taken: the line is tried later */
        return -1;
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
    return f->bn >= c->cfg->batch_lines || f->batch.len >= c->cfg->batch_bytes;
}

/* The members "seq" and "type" of a parsed line, by a walk over its
 * first members (every gpufl line starts v, sid, st, seq, ts, type):
 * per line this runs a million times a second, so no general lookup
 * unless the walk misses them. */
static void seq_type(jsonl_doc *d, uint32_t *seq, uint32_t *type)
{
    uint32_t t = 1;

    *seq = *type = JSONL_NOTFOUND;
    if (d->n == 0 || d->tok[0].type != JSONL_OBJECT)
        return;
    for (uint32_t m = 0; m < d->tok[0].n && m < 8 && t + 1 < d->n; m++) {
        const jsonl_tok *k = &d->tok[t];
        const char *s = d->line + k->off;
        if (k->len == 3 && !memcmp(s, "seq", 3) && *seq == JSONL_NOTFOUND)
            *seq = t + 1;
        else if (k->len == 4 && !memcmp(s, "type", 4) &&
                 *type == JSONL_NOTFOUND)
            *type = t + 1;
        if (*seq != JSONL_NOTFOUND && *type != JSONL_NOTFOUND)
            return;
        t = d->tok[t + 1].next;
    }
    if (*seq == JSONL_NOTFOUND)
        *seq = jsonl_doc_findn(d, "seq", 3);
    if (*type == JSONL_NOTFOUND)
        *type = jsonl_doc_findn(d, "type", 4);
}

/* A plain non-negative integer token of up to 19 digits (every seq the
 * client writes), else the general getter. */
static int tok_seq(jsonl_doc *d, uint32_t t, uint64_t *out)
{
    const jsonl_tok *k;
    uint64_t v = 0;

    if (t >= d->n)
        return -1;
    k = &d->tok[t];
    if (k->type != JSONL_NUMBER || k->flags || k->len > 19)
        return jsonl_tok_u64(d, t, out);
    for (uint32_t i = 0; i < k->len; i++)
        v = v * 10 + (uint64_t)(d->line[k->off + i] - '0');
    *out = v;
    return 0;
}

/* What a parsed line says for continuity: its seq, whether it ends the
 * stream, and, at offset 0, the file's index. */
static void line_facts(agent_ctx *c, agent_file *f, jsonl_doc *d,
                       uint64_t start)
{
    uint32_t st, ty;
    uint64_t seq;

    seq_type(d, &st, &ty);
    if (tok_seq(d, st, &seq) == 0) {
        f->cons_seq = seq;
        f->cons_seq_known = 1;
    }
    f->ended = ty < d->n && d->tok[ty].type == JSONL_STRING &&
               d->tok[ty].len == 11 &&
               memcmp(d->line + d->tok[ty].off, "session_end", 11) == 0;
    if (start == 0)
        agent_gap_start(c, f);
}

/* raw[0, raw_len), ending at file offset end_off, is taken. */
static void consume(agent_ctx *c, agent_file *f, const char *raw,
                    size_t raw_len, uint64_t end_off)
{
    c->st.read_lines++;
    c->st.read_bytes += raw_len;
    f->consumed = end_off;
    agent_mark_put(f, raw, raw_len);
}

/* Checks one complete line and takes it: into the batch, or aside.
 * Returns -1 (nothing taken) when the batch cannot grow. */
static int take_line(agent_ctx *c, agent_file *f, const char *raw,
                     size_t raw_len, const char *line, size_t n,
                     uint64_t end_off)
{
    uint64_t start = end_off - raw_len;
    jsonl_doc d;
    int rc, parsed = 0;

    if (n == 0 || n > c->cfg->max_line_bytes) {
        consume(c, f, raw, raw_len, end_off);
        if (n) {
            char r[96];
            int k = snprintf(r, sizeof r, "line over %llu bytes",
                             (unsigned long long)c->cfg->max_line_bytes);
            agent_dead_put(c, f, start, line, n, n, r, (size_t)k);
        }
        return 0; /* blank lines carry nothing */
    }
    if (batch_reserve(c, f, raw_len + 1))
        return -1; /* out of memory: leave the line for later, unconsumed */
    jsonl_doc_init(&d, c->tok, AGENT_TOKENS);
    rc = jsonl_doc_parse_obj(&d, line, n);
    if (rc == GPUFL_ETOOBIG) {
        if (!c->tok_big)
            c->tok_big = malloc(AGENT_TOKENS_BIG * sizeof *c->tok_big);
        if (c->tok_big) {
            jsonl_doc_init(&d, c->tok_big, AGENT_TOKENS_BIG);
            rc = jsonl_doc_parse_obj(&d, line, n);
        }
    }
    if (rc == 0)
        parsed = 1;
    else if (rc == GPUFL_ETOOBIG)
        rc = 0; /* too big to check here: the receiver will */
    if (parsed && start == 0) {
        agent_gap_first_line(f, &d);
        if (agent_gap_hold(c, f))
            return -1; /* a file before it may still turn up */
    }
    consume(c, f, raw, raw_len, end_off);
    if (rc) {
        char r[160];
        int k = snprintf(r, sizeof r, "malformed JSON at byte %zu: %s",
                         d.err_off, d.err ? d.err : "?");
        agent_dead_put(c, f, start, line, n, n, r, (size_t)k);
        return 0;
    }
    if (parsed) {
        if (!f->sid[0] && d.n) {
            uint32_t t = jsonl_doc_find(&d, "sid");
            size_t sl;
            if (jsonl_tok_str(&d, t, f->sid, sizeof f->sid, &sl))
                f->sid[0] = '\0';
        }
        line_facts(c, f, &d, start);
    }
    /* in the room batch_reserve took; the NUL is never needed */
    memcpy(f->batch.p + f->batch.len, raw, raw_len);
    f->batch.len += raw_len;
    if (raw[raw_len - 1] != '\n') /* the last line of a final file */
        f->batch.p[f->batch.len++] = '\n';
    if (f->bn == 0) {
        f->bfirst_ms = agent_now_ms();
        c->nheld++;
    }
    f->bend[f->bn] = (uint32_t)f->batch.len;
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
        int same = 1;
        if (f->head_len) {
            n = pread(f->fd, head, f->head_len, 0);
            same = n < 0 || (n == (ssize_t)f->head_len &&
                             !memcmp(head, f->head, f->head_len));
        }
        /* the offset marker: the bytes just before what was consumed
         * (a file rewritten in place keeps its head but not these) */
        if (same && f->mark_len && !f->skipping && f->consumed >= f->mark_len) {
            n = pread(f->fd, head, f->mark_len,
                      (off_t)(f->consumed - f->mark_len));
            same = n < 0 || (n == (ssize_t)f->mark_len &&
                             !memcmp(head, f->mark, f->mark_len));
        }
        if (same)
            return 0;
    }
    glog_warn("ship",
              "%s was truncated or replaced; reading it again "
              "from the start",
              f->path);
    c->st.truncations++;
    f->rbase = f->rlen = f->rpos = 0;
    f->acked = f->consumed = 0;
    if (f->bn)
        c->nheld--;
    f->bn = 0;
    gbuf_setlen(&f->batch, 0);
    f->head_len = 0;
    f->sid[0] = '\0';
    f->skipping = 0;
    f->mark_len = f->amark_len = 0;
    f->fidx_known = f->hseq_known = f->cons_seq_known = 0;
    f->ended = 0;
    f->hold_scan = 0;
    f->size = (uint64_t)st.st_size;
    f->eof = 0;
    c->cursor_dirty = 1;
    return 1;
}

/* consumed jumped to the end of rbuf[0, end): the mark follows. */
static void mark_reset(agent_file *f, size_t end)
{
    f->mark_len = 0;
    agent_mark_put(f, f->rbuf, end);
}

/* A file that cannot be opened waits for the poll timer or a scan (which
 * re-checks its name) instead of being retried every round; a reason
 * other than "gone" or "moved" is said once. */
static void open_failed(agent_ctx *c, agent_file *f, int rc)
{
    int e = errno;

    f->idle = 1;
    c->scan_needed = 1;
    if (f->consumed == 0 && (rc == GPUFL_EAGAIN || e == ENOENT)) {
        /* its name holds another file now, or none: renamed or deleted.
         * Nothing of it was read, so nothing is lost by forgetting it at
         * once (the next scan takes it again under its new name; a file
         * deleted unread shows as a hole in its stream's file indexes)
         * instead of letting it hold up its stream for three scans */
        f->gone = 1;
        return;
    }
    if (rc == GPUFL_EAGAIN) {
        /* another file under the name now: the scan checks its head */
        f->touched = 1;
        return;
    }
    if (f->warned || (rc == GPUFL_EIO && e == ENOENT))
        return;
    f->warned = 1;
    glog_warn("ship",
              "cannot open %s: %s%s; retrying every "
              "--poll-ms",
              f->path, rc == GPUFL_EINVAL ? "not a regular file" : strerror(e),
              e == EMFILE ? " (raise the open-files limit, ulimit -n)" : "");
}

/* Reads and takes lines until the batch is full or the data ends.
 * Returns 1 if anything moved. */
static int pump(agent_ctx *c, agent_file *f)
{
    int moved = 0;

    if (f->fd < 0) {
        int rc = agent_file_open(f);
        if (rc) {
            open_failed(c, f, rc);
            return 0;
        }
        f->warned = 0;
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
                mark_reset(f, f->rpos);
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
            glog_error("ship",
                       "cannot read %s (corrupt or unreadable); "
                       "the rest of it is skipped",
                       f->path);
            f->final = 1;
            f->rpos = f->rlen;
            f->consumed = f->rbase + f->rlen;
            mark_reset(f, f->rlen);
        }
        if (!f->rd_zst && f->rbase + f->rlen > f->size)
            f->size = f->rbase + f->rlen;
        if (!f->final && f->ended && f->rpos == f->rlen) {
            /* the stream's session_end was its last line: nothing more
             * will come (the writer closed it), so it is finished like a
             * rotated file, and costs nothing from now on */
            f->final = 1;
        }
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
                mark_reset(f, f->rlen);
            }
            moved = 1;
        } else if (f->skipping && f->final) {
            f->consumed = f->rbase + f->rlen;
            mark_reset(f, f->rlen);
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

    agent_dead_put(c, f, off, f->batch.p + start, n - 1, n - 1, reason, len);
    (*(uint64_t *)p[2])++;
}

/* Everything consumed is acknowledged now: the cursor and the stream's
 * continuity follow. */
static void acked_all(agent_ctx *c, agent_file *f)
{
    f->acked = f->consumed;
    f->amark = agent_fp(f->mark, f->mark_len);
    f->amark_len = f->mark_len;
    c->cursor_dirty = 1;
    agent_gap_acked(c, f);
}

/* A failed send: said once per burst of failures (and again when the
 * reason changes, or each minute it lasts), never once per retry. */
static void send_failed(agent_ctx *c, const agent_file *f, const char *why,
                        uint64_t delay)
{
    uint64_t now = agent_now_ms();

    if (c->fail_count++ == 0) {
        c->fail_since_ms = now;
        c->fail_why[0] = '\0';
    }
    if (!strncmp(why, c->fail_why, sizeof c->fail_why - 1) &&
        now - c->fail_logged_ms < 60000)
        return;
    glog_field fl[4] = { GLOG_STR("sink", c->sink->ops->name),
                         GLOG_STR("error", why),
                         GLOG_NUM("attempts", c->fail_count),
                         GLOG_NUM("retry_ms", delay) };
    if (c->fail_count == 1)
        glog_fields(GLOG_WARN, "ship", fl, 4,
                    "%s send of %u %s lines failed: %s; retrying with "
                    "backoff, first retry in %" PRIu64
                    " ms (nothing is dropped)",
                    c->sink->ops->name, f->bn, agent_stream_names[f->stream],
                    why, delay);
    else
        glog_fields(GLOG_WARN, "ship", fl, 4,
                    "%s sends still failing after %" PRIu64
                    " attempts over %" PRIu64 " s: %s; retrying (nothing is "
                    "dropped)",
                    c->sink->ops->name, c->fail_count,
                    (now - c->fail_since_ms) / 1000, why);
    snprintf(c->fail_why, sizeof c->fail_why, "%s", why);
    c->fail_logged_ms = now;
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
    /* lingering fills batches, but a thousand files each holding one is a
     * thousand batches in memory: past AGENT_HELD_MAX, send at once */
    if (!batch_full(c, f) && !(f->eof && (c->cfg->once || f->final)) &&
        now - f->bfirst_ms < c->cfg->linger_ms && c->nheld <= AGENT_HELD_MAX)
        return 0;
    b.stream = f->stream;
    b.sid = f->sid;
    b.buf = f->batch.p;
    b.len = f->batch.len;
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
        acked_all(c, f);
        f->bn = 0;
        gbuf_setlen(&f->batch, 0);
        c->nheld--;
        if (c->fail_count)
            glog_info("ship",
                      "sink is back after %" PRIu64
                      " failed attempts over %" PRIu64 " s; shipping resumed",
                      c->fail_count, (now - c->fail_since_ms) / 1000);
        c->fail_count = 0;
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
        send_failed(c, f, why, d);
    }
    return 0;
}

/* Settles a file with nothing in flight: commit dropped lines, finish. */
static void settle(agent_ctx *c, agent_file *f)
{
    if (f->bn)
        return;
    if (f->acked < f->consumed)
        acked_all(c, f);
    if (f->final && f->eof && f->rpos == f->rlen && !f->done) {
        /* finished: only its identity stays */
        f->done = 1;
        f->idle = 0;
        c->cursor_dirty = 1;
        agent_file_close(f);
        agent_batch_park(c, f);
    }
}

int agent_turn(agent_ctx *c, agent_file *f)
{
    int moved = pump(c, f);

    moved |= maybe_send(c, f, agent_now_ms());
    settle(c, f);
    if (!moved && !f->done && !f->final && f->eof && !f->bn &&
        f->acked == f->consumed && f->fd >= 0) {
        /* read to its end with nothing in flight: it costs nothing until
         * it is written again */
        f->idle = 1;
        agent_file_idle(c, f);
    } else if (!f->done) {
        /* between turns a plain file keeps no read buffer (what was read
         * ahead is read again next turn), and no empty batch */
        agent_file_rest(c, f);
        agent_batch_park(c, f);
    }
    return moved;
}
