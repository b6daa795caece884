/*
 * commit.c - the cursor as the agent writes it (format: cursor.h): one
 * line per file with acknowledged lines and per stream with a known
 * position, written atomically at most every --cursor-sync-ms and at exit.
 *
 * Each file and stream keeps its last formatted line and what it was made
 * from; a commit formats again only the entries that changed, so a folder
 * of a thousand finished files does not make every commit format a
 * thousand lines.
 */
#include "agent/agent_int.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Appends n bytes to the commit body; 0 or -1. */
static int body_put(agent_ctx *c, size_t *pos, const char *p, size_t n)
{
    if (*pos + n > c->cbody_cap) {
        size_t cap = c->cbody_cap ? c->cbody_cap : 65536;
        char *g;
        while (cap < *pos + n)
            cap *= 2;
        g = realloc(c->cbody, cap);
        if (!g)
            return -1;
        c->cbody = g;
        c->cbody_cap = cap;
    }
    memcpy(c->cbody + *pos, p, n);
    *pos += n;
    return 0;
}

/* Keeps s (a formatted line of w bytes, or w < 0) as *line. */
static int keep_line(char **line, uint32_t *len, const char *s, int w)
{
    char *g;

    if (w < 0)
        return -1;
    g = realloc(*line, (size_t)w);
    if (!g)
        return -1;
    memcpy(g, s, (size_t)w);
    *line = g;
    *len = (uint32_t)w;
    return 0;
}

/* f's cursor line (f must have an entry), formatted again only if its
 * entry changed since the last commit: with a thousand finished files a
 * commit every --cursor-sync-ms would otherwise cost more than the
 * lines it commits. */
static int file_line(agent_file *f, char *tmp)
{
    size_t nl = strlen(f->name);
    agent_centry e;

    if (f->hfp_len != f->head_len) {
        f->hfp = agent_fp(f->head, f->head_len);
        f->hfp_len = f->head_len;
    }
    memset(&e, 0, offsetof(agent_centry, name));
    e.fp = f->hfp;
    e.fp_len = f->head_len;
    e.dev = f->dev;
    e.ino = f->ino;
    e.off = f->acked;
    e.flags =
        (f->done ? CURSOR_F_DONE : 0) | (f->archived ? CURSOR_F_ARCHIVED : 0);
    e.mark = f->amark;
    e.mark_len = f->amark_len <= f->acked ? f->amark_len : 0;
    if (f->cline && f->cl.fp == e.fp && f->cl.fp_len == e.fp_len &&
        f->cl.dev == e.dev && f->cl.ino == e.ino && f->cl.off == e.off &&
        f->cl.flags == e.flags && f->cl.mark == e.mark &&
        f->cl.mark_len == e.mark_len && f->cline_len > nl + 1 &&
        !memcmp(f->cline + f->cline_len - 1 - nl, f->name, nl))
        return 0;
    if (nl > CURSOR_NAME_MAX)
        return -1;
    memcpy(e.name, f->name, nl + 1);
    if (keep_line(&f->cline, &f->cline_len, tmp,
                  agent_cursor_entry_line(&e, tmp, CURSOR_LINE_MAX)))
        return -1;
    f->cl.fp = e.fp;
    f->cl.fp_len = e.fp_len;
    f->cl.dev = e.dev;
    f->cl.ino = e.ino;
    f->cl.off = e.off;
    f->cl.flags = e.flags;
    f->cl.mark = e.mark;
    f->cl.mark_len = e.mark_len;
    return 0;
}

static int key_line(agent_key *k, char *tmp)
{
    uint64_t now[5] = { k->next_file, k->next_seq, k->lost_files, k->lost_lines,
                        k->flags };
    agent_ckey e;

    if (k->cline && !memcmp(now, k->cl, sizeof now))
        return 0;
    memset(&e, 0, sizeof e);
    e.next_file = k->next_file;
    e.next_seq = k->next_seq;
    e.lost_files = k->lost_files;
    e.lost_lines = k->lost_lines;
    e.flags = k->flags;
    memcpy(e.name, k->name, sizeof e.name);
    if (keep_line(&k->cline, &k->cline_len, tmp,
                  agent_cursor_key_line(&e, tmp, CURSOR_LINE_MAX)))
        return -1;
    memcpy(k->cl, now, sizeof now);
    return 0;
}

void agent_cursor_commit(agent_ctx *c, int force)
{
    uint64_t now = agent_now_ms();
    char tmp[CURSOR_LINE_MAX];
    size_t pos = 0, n = 0, nk = 0;
    int rc = GPUFL_ENOMEM;

    if (!c->cursor_dirty)
        return;
    if (!force && now - c->cursor_saved_ms < c->cfg->cursor_sync_ms)
        return;
    for (size_t i = 0; i < c->nfiles; i++) {
        agent_file *f = c->files[i];
        if ((!f->acked && !f->done) || !f->head_len)
            continue;
        if (file_line(f, tmp) || body_put(c, &pos, f->cline, f->cline_len))
            goto out;
        n++;
    }
    for (size_t i = 0; i < c->nkeys; i++) {
        agent_key *k = c->keys[i];
        if (!k->flags && !k->lost_files && !k->lost_lines)
            continue;
        if (key_line(k, tmp) || body_put(c, &pos, k->cline, k->cline_len))
            goto out;
        nk++;
    }
    /* dead letters first: the cursor must not pass lines not yet kept */
    agent_dead_sync(c);
    rc = agent_cursor_save_body(c->cfg->cursor_file, c->cbody, pos, n, nk);
out:
    if (rc == 0) {
        c->cursor_dirty = 0;
    } else {
        glog_error("cursor", "cannot write cursor %s: %s", c->cfg->cursor_file,
                   rc == GPUFL_EIO ? strerror(errno) : gpufl_strerror(rc));
    }
    /* after a failure too: the next try waits like a normal write */
    c->cursor_saved_ms = now;
}
