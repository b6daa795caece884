/*
 * dead.c - the dead-letter file: lines the agent sets aside so they never
 * block their stream (malformed JSON, over --max-line-bytes, refused by
 * the receiver).  One JSON object per line:
 *
 *   {"ts":<unix ns>,"file":"...","offset":N,"len":N,"reason":"...",
 *    "line":"<the line, escaped; at most AGENT_DEAD_KEEP bytes>",
 *    "truncated":true|false}
 *
 * Invalid UTF-8 in a kept line is replaced by U+FFFD (jw.h), so the file
 * is always valid JSONL.  It is fsynced before the cursor moves past the
 * lines it holds: a crash may dead-letter a line twice, never lose it.
 * It is created 0600: it holds log lines, which may say more than their
 * folder's readers should see.
 */
#include "agent/agent_int.h"

#include "common/jw.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int agent_dead_open(agent_ctx *c)
{
    const agent_cfg *cfg = c->cfg;

    if (cfg->dead_letter_file)
        snprintf(c->dead_path, sizeof c->dead_path, "%s",
                 cfg->dead_letter_file);
    else
        snprintf(c->dead_path, sizeof c->dead_path, "%s.dead.jsonl",
                 cfg->cursor_file);
    c->dead = NULL; /* opened on the first dead letter */
    return 0;
}

void agent_dead_put(agent_ctx *c, const agent_file *f, uint64_t off,
                    const char *line, size_t len, size_t full_len,
                    const char *reason, size_t reason_len)
{
    /* escaping may take 6 bytes per input byte */
    size_t cap = AGENT_DEAD_KEEP * 6 + 8192;
    char *buf;
    struct timespec ts;
    jw w;

    c->st.dead_lines++;
    if (!c->dead) {
        int fd =
            open(c->dead_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        c->dead = fd >= 0 ? fdopen(fd, "a") : NULL;
        if (!c->dead && fd >= 0)
            close(fd);
        if (!c->dead) {
            glog_error("dead",
                       "cannot open dead-letter file %s: %s; the "
                       "line at %s:%llu is counted but not kept",
                       c->dead_path, strerror(errno), f->path,
                       (unsigned long long)off);
            return;
        }
    }
    buf = malloc(cap);
    if (!buf)
        return;
    if (len > AGENT_DEAD_KEEP)
        len = AGENT_DEAD_KEEP;
    clock_gettime(CLOCK_REALTIME, &ts);
    jw_init(&w, buf, cap);
    jw_obj_begin(&w);
    jw_kv_u64(&w, "ts",
              (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    jw_kv_str(&w, "file", f->path);
    jw_kv_u64(&w, "offset", off);
    jw_kv_u64(&w, "len", full_len);
    jw_key(&w, "reason");
    jw_strn(&w, reason, reason_len, 1024);
    jw_key(&w, "line");
    jw_strn(&w, line, len, len);
    jw_key(&w, "truncated");
    jw_bool(&w, len < full_len);
    jw_obj_end(&w);
    jw_put(&w, "\n", 1);
    /* out at once, whole: a user (or a test) tailing the file sees
     * records, not the first 4 KiB of one (CI read a cut record) */
    if (!w.err && fwrite(buf, 1, w.len, c->dead) == w.len)
        fflush(c->dead);
    free(buf);
}

void agent_dead_sync(agent_ctx *c)
{
    if (c->dead) {
        fflush(c->dead);
        fdatasync(fileno(c->dead));
    }
}

void agent_dead_close(agent_ctx *c)
{
    if (c->dead) {
        agent_dead_sync(c);
        fclose(c->dead);
    }
    c->dead = NULL;
}
