/*
 * archive.c - the S3 archive of rotated files: once a rotated file is
 * shipped to its end, it is compressed (zstd, unless already .zst) and
 * uploaded as <prefix>/<host>/<session>/<stream>.<n>.log.zst, so keys of
 * different hosts and sessions never collide; then, with
 * --archiver-delete, removed locally.  Progress is the ARCHIVED flag in
 * the cursor, so a restart neither re-uploads nor forgets a file.
 *
 * Uploads run on the pipeline thread, one file per loop turn, with their
 * own backoff: a slow or failing archive delays shipping by at most one
 * upload (bounded by --timeout-ms per request) and never blocks it.
 */
#include "agent/agent_int.h"
#include "httpc/s3.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int agent_archive_open(agent_ctx *c)
{
    const agent_cfg *cfg = c->cfg;
    char why[256];

    if (!cfg->archiver_endpoint)
        return 0;
    c->s3 = s3_client_new(cfg->archiver_endpoint, cfg->archiver_bucket,
                          cfg->archiver_region, cfg->archiver_access_key,
                          cfg->archiver_secret_key, cfg->timeout_ms,
                          cfg->ca_file, why, sizeof why);
    if (!c->s3) {
        glog_error("archive", "cannot set up the S3 archive: %s", why);
        return -1;
    }
    snprintf(c->tmp_zst, sizeof c->tmp_zst, "%s.archive.zst.tmp",
             cfg->cursor_file);
    return 0;
}

void agent_archive_close(agent_ctx *c)
{
    s3_client_free(c->s3);
    c->s3 = NULL;
}

/* A string field of the file's first (session) line, or "". */
static void head_field(const agent_file *f, const char *key, char *out,
                       size_t cap)
{
    jsonl_tok tok[512];
    jsonl_doc d;
    const char *nl = memchr(f->head, '\n', f->head_len);
    size_t n;

    out[0] = '\0';
    if (!nl)
        return;
    jsonl_doc_init(&d, tok, 512);
    if (jsonl_doc_parse_obj(&d, (const char *)f->head,
                            (size_t)(nl - (const char *)f->head)) ||
        jsonl_tok_str(&d, jsonl_doc_find(&d, key), out, cap, &n))
        out[0] = '\0';
    /* keys must not grow path segments out of a field */
    for (char *p = out; *p; p++)
        if (*p == '/' || (unsigned char)*p < 0x20)
            *p = '_';
}

/* Opens the temporary copy: 0600 (it holds the log's lines), never
 * through a link planted at its name. */
static FILE *tmp_open(const char *dst)
{
    int fd =
        open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    FILE *f;

    if (fd < 0)
        return NULL;
    f = fdopen(fd, "wb");
    if (!f)
        close(fd);
    return f;
}

static FILE *src_open(const char *src)
{
    struct stat st;
    int fd = agent_open_log(src, &st);
    FILE *f;

    if (fd < 0)
        return NULL;
    f = fdopen(fd, "rb");
    if (!f)
        close(fd);
    return f;
}

static int compress_to(const char *src, const char *dst)
{
    FILE *in = src_open(src), *out = tmp_open(dst);
    ZSTD_CCtx *cx = ZSTD_createCCtx();
    size_t in_cap = AGENT_CHUNK, out_cap = ZSTD_CStreamOutSize();
    char *ib = malloc(in_cap), *ob = malloc(out_cap);
    int rc = -1;

    if (!in || !out || !cx || !ib || !ob)
        goto out;
    ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(cx, ZSTD_c_checksumFlag, 1);
    for (;;) {
        size_t n = fread(ib, 1, in_cap, in), left;
        int last = n < in_cap;
        ZSTD_inBuffer zi = { ib, n, 0 };
        do {
            ZSTD_outBuffer zo = { ob, out_cap, 0 };
            left = ZSTD_compressStream2(cx, &zo, &zi,
                                        last ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(left) || fwrite(ob, 1, zo.pos, out) != zo.pos)
                goto out;
        } while (last ? left != 0 : zi.pos < zi.size);
        if (last)
            break;
    }
    rc = ferror(in) || fflush(out) ? -1 : 0;
out:
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    ZSTD_freeCCtx(cx);
    free(ib);
    free(ob);
    return rc;
}

static int archive_one(agent_ctx *c, agent_file *f)
{
    const agent_cfg *cfg = c->cfg;
    char host[256], sid[64], key[2048], why[512];
    const char *src = f->path;
    int rc;

    head_field(f, "host", host, sizeof host);
    if (!host[0] && gethostname(host, sizeof host))
        snprintf(host, sizeof host, "unknown-host");
    head_field(f, "sid", sid, sizeof sid);
    if (!sid[0])
        snprintf(sid, sizeof sid, "%s", f->sid[0] ? f->sid : "unknown");
    snprintf(key, sizeof key, "%s/%s/%s/%s.%u.log.zst", cfg->archiver_prefix,
             host, sid, agent_stream_names[f->stream], f->n);
    if (!f->zst) {
        if (compress_to(f->path, c->tmp_zst)) {
            glog_error("archive", "archive: cannot compress %s", f->path);
            unlink(c->tmp_zst);
            return -1;
        }
        src = c->tmp_zst;
    }
    rc = s3_put_file(c->s3, key, src, why, sizeof why);
    if (!f->zst)
        unlink(c->tmp_zst);
    if (rc) {
        glog_error("archive", "archive of %s as %s failed: %s", f->path, key,
                   why);
        return -1;
    }
    f->archived = 1;
    c->cursor_dirty = 1;
    c->st.archived++;
    if (cfg->archiver_delete && unlink(f->path) && errno != ENOENT)
        glog_warn("archive", "archive: cannot delete %s: %s", f->path,
                  strerror(errno));
    return 0;
}

int agent_archive_pending(const agent_ctx *c, const agent_file *f)
{
    return c->s3 && f->done && !f->archived && f->n != AGENT_LIVE && f->seen;
}

int agent_archive_step(agent_ctx *c)
{
    uint64_t now = agent_now_ms();

    if (!c->s3 || now < c->archive_until_ms)
        return 0;
    for (size_t i = 0; i < c->nfiles; i++) {
        agent_file *f = c->files[i];
        if (!agent_archive_pending(c, f))
            continue;
        if (archive_one(c, f) == 0) {
            c->archive_backoff_ms = 0;
            return 1;
        }
        c->archive_backoff_ms = c->archive_backoff_ms
                                    ? c->archive_backoff_ms * 2
                                    : c->cfg->retry_min_ms;
        if (c->archive_backoff_ms > c->cfg->retry_max_ms)
            c->archive_backoff_ms = c->cfg->retry_max_ms;
        c->archive_until_ms = now + c->archive_backoff_ms;
        return 0;
    }
    return 0;
}
