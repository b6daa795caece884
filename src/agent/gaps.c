/*
 * gaps.c - the continuity of each stream: which files of a session's
 * stream the sink has acknowledged, and the report of every file deleted
 * before the agent read it.
 *
 * The client numbers its files: the session line that starts each file
 * carries "file":k (file k becomes .log.<k+1> when rotated) and the
 * stream's seq at that point (docs/events.md 3.2).  Files of one stream
 * are read strictly in order, so when file k starts, every file below k
 * has been read or accounted for; if the last file acknowledged was j <
 * k - 1, files j+1 .. k-1 were deleted unread (keep-K pruning while the
 * agent was behind or stopped), and the seq of k's session line says how
 * many lines they held.  Such a loss is logged once, counted in the stats
 * line, kept in the cursor's stream entries (for --status and restarts),
 * and never silent.
 *
 * A stream is a "key" (<prefix>.<stream>) within one folder.  Keys live as
 * long as a file of theirs is followed; the sorted array makes the lookup
 * at each new file O(log n).
 */
#include "agent/agent_int.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int key_cmp(const char *name, int folder, const agent_key *k)
{
    int r = strcmp(name, k->name);
    if (r)
        return r;
    return folder < k->folder ? -1 : folder > k->folder;
}

/* Index of (name, folder) in c->keys, or where it would go (*found 0). */
static size_t key_pos(const agent_ctx *c, int folder, const char *name,
                      int *found)
{
    size_t lo = 0, hi = c->nkeys;

    *found = 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = key_cmp(name, folder, c->keys[mid]);
        if (r == 0) {
            *found = 1;
            return mid;
        }
        if (r < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

agent_key *agent_key_find(const agent_ctx *c, int folder, const char *name)
{
    int found;
    size_t i = key_pos(c, folder, name, &found);
    return found ? c->keys[i] : NULL;
}

/* What the cursor said about this stream, if anything (the first folder
 * to claim it gets it: prefixes carry a time and the session id). */
static void key_restore(agent_ctx *c, agent_key *k)
{
    for (size_t i = 0; i < c->pend.nk; i++) {
        agent_ckey *e = &c->pend.k[i];
        if (strcmp(e->name, k->name) != 0)
            continue;
        k->next_file = (uint32_t)e->next_file;
        k->next_seq = e->next_seq;
        k->flags = e->flags;
        k->lost_files = e->lost_files;
        k->lost_lines = e->lost_lines;
        c->pend.k[i] = c->pend.k[--c->pend.nk];
        return;
    }
}

agent_key *agent_key_get(agent_ctx *c, int folder, const char *name, int stream)
{
    int found;
    size_t i = key_pos(c, folder, name, &found);
    agent_key *k;

    if (found)
        return c->keys[i];
    if (c->nkeys == c->capkeys) {
        size_t cap = c->capkeys ? c->capkeys * 2 : 64;
        agent_key **g = realloc(c->keys, cap * sizeof *g);
        if (!g)
            return NULL;
        c->keys = g;
        c->capkeys = cap;
    }
    k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    snprintf(k->name, sizeof k->name, "%s", name);
    k->folder = folder;
    k->stream = stream;
    key_restore(c, k);
    memmove(c->keys + i + 1, c->keys + i, (c->nkeys - i) * sizeof *c->keys);
    c->keys[i] = k;
    c->nkeys++;
    return k;
}

void agent_keys_prune(agent_ctx *c)
{
    size_t keep = 0;

    for (size_t i = 0; i < c->nkeys; i++) {
        if (c->keys[i]->nfiles) {
            c->keys[keep++] = c->keys[i];
        } else {
            free(c->keys[i]->cline);
            free(c->keys[i]);
            c->cursor_dirty = 1;
        }
    }
    c->nkeys = keep;
}

void agent_gap_first_line(agent_file *f, jsonl_doc *d)
{
    uint32_t t = jsonl_doc_find(d, "type");
    uint64_t v;

    if (jsonl_tok_type(d, t) != JSONL_STRING || d->tok[t].len != 7 ||
        memcmp(d->line + d->tok[t].off, "session", 7) != 0)
        return;
    if (jsonl_tok_u64(d, jsonl_doc_find(d, "file"), &v) == 0 &&
        v < UINT32_MAX) {
        f->fidx = (uint32_t)v;
        f->fidx_known = 1;
    }
    if (jsonl_tok_u64(d, jsonl_doc_find(d, "seq"), &v) == 0) {
        f->hseq = v;
        f->hseq_known = 1;
    }
}

void agent_gap_head_line(agent_ctx *c, agent_file *f, const char *line,
                         size_t n)
{
    jsonl_doc d;

    if (!n)
        return;
    jsonl_doc_init(&d, c->tok, AGENT_TOKENS);
    if (jsonl_doc_parse_obj(&d, line, n) == 0)
        agent_gap_first_line(f, &d);
}

static void say_lost(agent_ctx *c, const agent_key *k, const char *what,
                     uint64_t lines, uint64_t from_seq)
{
    char l[96];

    if (c->quiet)
        return;
    if (lines == UINT64_MAX)
        snprintf(l, sizeof l, "an unknown number of lines");
    else if (lines == 0)
        snprintf(l, sizeof l, "no lines");
    else
        snprintf(l, sizeof l, "%" PRIu64 " lines, seq %" PRIu64 "..%" PRIu64,
                 lines, from_seq, from_seq + lines - 1);
    {
        glog_field fl[3] = { GLOG_STR("folder", c->cfg->folder[k->folder]),
                             GLOG_STR("stream", k->name),
                             GLOG_NUM("lines", lines) };
        /* an unknown count is left out */
        glog_fields(GLOG_ERROR, "gaps", fl, lines == UINT64_MAX ? 2 : 3,
                    "LOST: %s/%s: %s (%s); never shipped",
                    c->cfg->folder[k->folder], k->name, what, l);
    }
}

static void count_lost(agent_ctx *c, agent_key *k, uint64_t files,
                       uint64_t lines)
{
    k->lost_files += files;
    c->st.lost_files += files;
    if (lines != UINT64_MAX) {
        k->lost_lines += lines;
        c->st.lost_lines += lines;
    }
    c->cursor_dirty = 1;
}

/* Is there a hole in the file indexes between what was acknowledged and
 * f (or before f, for a stream seen for the first time)? */
static int hole_before(const agent_file *f)
{
    const agent_key *k = f->k;

    if (!k || !f->fidx_known)
        return 0;
    if (k->flags & CURSOR_K_FILE)
        return f->fidx > k->next_file;
    return f->fidx > 0 && !k->history;
}

/* Is file j of k still in the folder?  File j of a stream is named
 * <key>.log.<j+1> once rotated, .zst when compressed; the plain name is
 * looked at first, since compression creates the .zst before it removes
 * the plain file. */
static int rotated_exists(const agent_ctx *c, const agent_key *k, uint32_t j)
{
    char p[4600];
    struct stat st;

    snprintf(p, sizeof p, "%s/%s.log.%u", c->cfg->folder[k->folder], k->name,
             j + 1);
    if (lstat(p, &st) == 0)
        return 1;
    snprintf(p, sizeof p, "%s/%s.log.%u.zst", c->cfg->folder[k->folder],
             k->name, j + 1);
    return lstat(p, &st) == 0;
}

int agent_gap_hold(agent_ctx *c, agent_file *f)
{
    const agent_key *k = f->k;
    uint32_t from, to;

    if (!hole_before(f)) {
        f->hold_scan = 0;
        return 0;
    }
    from = (k->flags & CURSOR_K_FILE) ? k->next_file : 0;
    /* a file of the hole that this agent follows is read (and shipped,
     * however long the sink is down) before f: no bound on that wait.
     * Giving up after a number of scans while the sink was down reported
     * files that were still in the folder as deleted, and skipped them. */
    for (size_t i = 0; i < c->nfiles; i++) {
        const agent_file *g = c->files[i];
        if (g != f && g->k == k && g->n != AGENT_LIVE && g->n >= from + 1 &&
            g->n <= f->fidx && !g->gone)
            return 1;
    }
    /* readdir can miss a name renamed during the scan (the client's
     * rotation and compression): a file of the hole that is in the folder
     * after all is found by the next scan and read first.  Bounded, in
     * case a scan never takes it (a name this agent does not follow). */
    if (!f->hold_scan)
        f->hold_scan = c->nscans + 1;
    if (c->nscans >= f->hold_scan + AGENT_HOLE_SCANS)
        return 0;
    to = f->fidx - from > AGENT_HOLE_LOOK ? from + AGENT_HOLE_LOOK : f->fidx;
    for (uint32_t j = from; j < to; j++) {
        if (rotated_exists(c, k, j)) {
            c->scan_needed = 1;
            return 1;
        }
    }
    return 0;
}

void agent_gap_start(agent_ctx *c, agent_file *f)
{
    agent_key *k = f->k;
    uint64_t lines = UINT64_MAX, from = 0;
    char what[160];

    if (!k || !f->fidx_known)
        return;
    if (f->hseq_known && (k->flags & CURSOR_K_SEQ) && f->hseq >= k->next_seq) {
        lines = f->hseq - k->next_seq;
        from = k->next_seq;
    }
    if (!(k->flags & CURSOR_K_FILE)) {
        /* the first file this agent sees of the stream; a cursor from
         * before stream entries existed knows its history otherwise */
        if (f->fidx > 0 && !k->history) {
            snprintf(what, sizeof what,
                     "files 0..%u of the stream were deleted before the "
                     "agent first saw it",
                     f->fidx - 1);
            if (f->hseq_known) {
                lines = f->hseq;
                from = 0;
            }
            say_lost(c, k, what, lines, from);
            count_lost(c, k, f->fidx, lines);
        }
    } else if (f->fidx > k->next_file) {
        snprintf(what, sizeof what,
                 "%u file(s), index %u..%u, deleted before they were read",
                 f->fidx - k->next_file, k->next_file, f->fidx - 1);
        say_lost(c, k, what, lines, from);
        count_lost(c, k, f->fidx - k->next_file, lines);
    } else if (k->vanished && lines != UINT64_MAX && lines > 0) {
        /* the file was counted when it vanished; now its size in lines */
        say_lost(c, k, "the unshipped part of a file that vanished", lines,
                 from);
        count_lost(c, k, 0, lines);
    }
    k->vanished = 0;
    /* accounted for: a restart before anything of f is acknowledged must
     * not report the same files again */
    if (!(k->flags & CURSOR_K_FILE) || f->fidx > k->next_file) {
        k->next_file = f->fidx;
        k->flags |= CURSOR_K_FILE;
        c->cursor_dirty = 1;
    }
    if (f->hseq_known &&
        (!(k->flags & CURSOR_K_SEQ) || f->hseq > k->next_seq)) {
        k->next_seq = f->hseq;
        k->flags |= CURSOR_K_SEQ;
        c->cursor_dirty = 1;
    }
}

void agent_gap_acked(agent_ctx *c, agent_file *f)
{
    agent_key *k = f->k;

    if (!k)
        return;
    if (f->fidx_known &&
        (!(k->flags & CURSOR_K_FILE) || f->fidx + 1 > k->next_file)) {
        k->next_file = f->fidx + 1;
        k->flags |= CURSOR_K_FILE;
        c->cursor_dirty = 1;
    }
    if (f->cons_seq_known &&
        (!(k->flags & CURSOR_K_SEQ) || f->cons_seq + 1 > k->next_seq)) {
        k->next_seq = f->cons_seq + 1;
        k->flags |= CURSOR_K_SEQ;
        c->cursor_dirty = 1;
    }
}

void agent_gap_vanished(agent_ctx *c, agent_file *f, uint64_t unsent)
{
    agent_key *k = f->k;

    if (!c->quiet) {
        glog_field fl[2] = { GLOG_STR("file", f->path),
                             GLOG_NUM("bytes_unsent", unsent) };
        glog_fields(GLOG_ERROR, "gaps", fl, 2,
                    "LOST: %s vanished before it was shipped (%" PRIu64
                    " bytes unsent)",
                    f->path, unsent);
    }
    if (!k) {
        c->st.lost_files++;
        return;
    }
    count_lost(c, k, 1, UINT64_MAX);
    k->vanished = 1;
    /* the hole check at the next file must not count it again; a rotated
     * name says its index when its head did not */
    if (f->fidx_known || f->n != AGENT_LIVE) {
        uint32_t idx = f->fidx_known ? f->fidx : f->n - 1;
        if (!(k->flags & CURSOR_K_FILE) || idx + 1 > k->next_file) {
            k->next_file = idx + 1;
            k->flags |= CURSOR_K_FILE;
        }
    }
}

uint64_t agent_gap_pending(const agent_ctx *c, const agent_key *k,
                           uint32_t *first, uint64_t *lines)
{
    const agent_file *m = NULL;

    *lines = UINT64_MAX;
    *first = 0;
    if (!(k->flags & CURSOR_K_FILE))
        return 0;
    /* the first file present at or after the next one expected */
    for (size_t i = 0; i < c->nfiles; i++) {
        const agent_file *f = c->files[i];
        if (f->k == k && f->fidx_known && f->fidx >= k->next_file &&
            (!m || f->fidx < m->fidx))
            m = f;
    }
    if (!m || m->fidx == k->next_file)
        return 0;
    *first = k->next_file;
    if (m->hseq_known && (k->flags & CURSOR_K_SEQ) && m->hseq >= k->next_seq)
        *lines = m->hseq - k->next_seq;
    return m->fidx - k->next_file;
}
