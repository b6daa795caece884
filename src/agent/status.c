/*
 * status.c - what the agent tells people: the periodic stats line on
 * stderr and `gpufl-agent --status`, the cursor's view of every file the
 * folders hold (shipped offset, size, bytes behind) and of every stream
 * (files lost: reported before, or deleted since the agent last ran).
 */
#include "agent/agent_int.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

uint64_t agent_behind(agent_ctx *c, int stream)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < c->nfiles; i++) {
        const agent_file *f = c->files[i];
        if (f->stream == stream && !f->done && f->size > f->acked)
            sum += f->size - f->acked;
    }
    return sum;
}

void agent_stats_line(agent_ctx *c)
{
    const agent_stats *s = &c->st;
    glog_info("stats",
              "stats read=%" PRIu64 " sent=%" PRIu64 " acked=%" PRIu64
              " retried=%" PRIu64 " dead=%" PRIu64 " requests=%" PRIu64
              " truncated=%" PRIu64 " lost-files=%" PRIu64
              " lost-lines=%" PRIu64 " skipped=%" PRIu64 " archived=%" PRIu64
              " files=%zu behind: device=%" PRIu64 " scope=%" PRIu64
              " system=%" PRIu64 " bytes",
              s->read_lines, s->sent_lines, s->acked_lines, s->retried,
              s->dead_lines, s->requests, s->truncations, s->lost_files,
              s->lost_lines, s->skipped, s->archived, c->nfiles,
              agent_behind(c, 0), agent_behind(c, 1), agent_behind(c, 2));
}

int agent_status_print(const agent_cfg *cfg, FILE *out)
{
    agent_ctx c;
    char err[256];
    int missing, rc;
    uint64_t tot[AGENT_NSTREAMS] = { 0 }, beh[AGENT_NSTREAMS] = { 0 };
    uint64_t lf[AGENT_NSTREAMS] = { 0 }, ll[AGENT_NSTREAMS] = { 0 };
    volatile int stop = 0;

    memset(&c, 0, sizeof c);
    c.cfg = cfg;
    c.stop = &stop;
    c.inotify_fd = -1;
    c.quiet = 1;
    c.tok = malloc(AGENT_TOKENS * sizeof *c.tok);
    if (!c.tok)
        return 1;
    rc =
        agent_cursor_load(cfg->cursor_file, &c.pend, &missing, err, sizeof err);
    if (rc || agent_scan_pending_init(&c)) {
        glog_error("stats", "cursor %s is unusable (%s)", cfg->cursor_file,
                   rc ? err : "out of memory");
        rc = 1;
        goto out;
    }
    if (missing)
        fprintf(out, "# no cursor at %s: nothing shipped yet\n",
                cfg->cursor_file);
    /* like a start: the pending entries are matched, the ones whose file
     * is gone are counted as lost (quietly: the lines below say it) */
    agent_scan(&c);
    fprintf(out, "%-60s %14s %14s %14s\n", "file", "size", "shipped", "behind");
    for (size_t i = 0; i < c.nfiles; i++) {
        agent_file *f = c.files[i];
        uint64_t size = agent_file_size(f->path, f->zst);
        uint64_t done = f->done ? size : f->acked;
        if (size == UINT64_MAX)
            continue;
        if (done > size)
            done = size;
        fprintf(out, "%-60s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
                f->name, size, done, size - done);
        tot[f->stream] += size;
        beh[f->stream] += size - done;
    }
    for (size_t i = 0; i < c.nkeys; i++) {
        const agent_key *k = c.keys[i];
        uint32_t first;
        uint64_t lines, n = agent_gap_pending(&c, k, &first, &lines);
        if (n) {
            fprintf(out,
                    "lost %s: %" PRIu64 " file(s), index %u..%" PRIu64
                    ", deleted before they were shipped",
                    k->name, n, first, first + n - 1);
            if (lines != UINT64_MAX)
                fprintf(out, " (%" PRIu64 " lines)", lines);
            fputc('\n', out);
            ll[k->stream] += lines != UINT64_MAX ? lines : 0;
        }
        lf[k->stream] += k->lost_files + n;
        ll[k->stream] += k->lost_lines;
    }
    for (int s = 0; s < AGENT_NSTREAMS; s++)
        fprintf(out,
                "stream %-7s files-bytes=%" PRIu64 " lost-files=%" PRIu64
                " lost-lines=%" PRIu64 " behind=%" PRIu64 "\n",
                agent_stream_names[s], tot[s], lf[s] + c.lost_gone[s], ll[s],
                beh[s]);
    rc = 0;
out:
    for (size_t i = 0; i < c.nfiles; i++)
        agent_file_free(c.files[i]);
    free(c.files);
    for (size_t i = 0; i < c.nkeys; i++) {
        free(c.keys[i]->cline);
        free(c.keys[i]);
    }
    free(c.keys);
    agent_cursor_release(&c.pend);
    free(c.pend_keyfp);
    free(c.tok);
    agent_watch_close(&c);
    return rc;
}
