/*
 * idle_http.c - the HTTP the idle detector speaks as a client (libcurl):
 * Jupyter Server's /api/status and /api/kernels, a dcgm-exporter scrape,
 * and the webhook POST of the action hook.  Answers are capped
 * (IDLE_HTTP_CAP) and parsed with src/common/jsonl.
 *
 * Jupyter: /api/status.last_activity also moves on any authenticated API
 * request (an open tab's polling), so input age comes from the kernels'
 * last_activity (kernel messages) and busy from execution_state.
 */
#include "idle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpufl/gpufl.h>

#include "common/buf.h"
#include "common/jsonl.h"
#include "httpc/httpc.h"

#define IDLE_HTTP_CAP (1024 * 1024)
#define IDLE_HTTP_TIMEOUT_MS 2000L
#define IDLE_JSON_TOKENS 8192

/* GET (body NULL) or POST (JSON) of url, verified with ca_file (NULL:
 * the system's CAs); the answer in out on a 2xx. */
static int http_do(const char *url, const char *token, const char *ca_file,
                   const char *body, gbuf *out, char *why, size_t whylen)
{
    httpc_cfg cfg = { IDLE_HTTP_TIMEOUT_MS, ca_file, NULL, 0 };
    httpc_req r = { url, NULL, NULL, body, body ? strlen(body) : 0 };
    struct curl_slist *h = NULL;
    httpc *c;
    long code = 0;
    int err;

    if ((err = httpc_new(&c, &cfg, why, whylen)) != 0)
        return err;
    /* Jupyter Server's scheme */
    if ((token && *token && httpc_auth(&h, "token", token)) ||
        (body && httpc_header(&h, "Content-Type", "application/json"))) {
        snprintf(why, whylen, "out of memory");
        err = GPUFL_ENOMEM;
        goto out;
    }
    r.headers = h;
    err = httpc_do(c, &r, out, &code, why, whylen);
    if (err)
        goto out;
    if (out->err == GPUFL_ETOOBIG) {
        snprintf(why, whylen, "answer larger than %d bytes", IDLE_HTTP_CAP);
        err = GPUFL_ETOOBIG;
    } else if (out->err) {
        snprintf(why, whylen, "out of memory");
        err = out->err;
    } else if (code < 200 || code > 299) {
        snprintf(why, whylen, "HTTP %ld from %s", code, url);
        err = GPUFL_EIO;
    }
out:
    httpc_headers_free(h);
    httpc_free(c);
    return err;
}

uint64_t idle_iso_ns(const char *s)
{
    struct tm tm;
    int y, mo, d, h, mi, n = 0;
    double sec;
    time_t t;
    memset(&tm, 0, sizeof tm);
    if (sscanf(s, "%d-%d-%dT%d:%d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) !=
            6 ||
        sec < 0 || sec >= 61)
        return 0;
    /* only UTC ("Z" or "+00:00") is produced by Jupyter */
    if (s[n] != 'Z' && strncmp(s + n, "+00:00", 6) != 0)
        return 0;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = (int)sec;
    t = timegm(&tm);
    if (t < 0)
        return 0;
    return (uint64_t)t * IDLE_NS + (uint64_t)((sec - (int)sec) * 1e9);
}

static uint64_t tok_time(jsonl_doc *d, uint32_t t)
{
    char buf[64];
    size_t n;
    if (jsonl_tok_str(d, t, buf, sizeof buf, &n))
        return 0;
    return idle_iso_ns(buf);
}

int idle_jupyter_get(const char *base, const char *token, const char *ca_file,
                     idle_jupyter *out, char *why, size_t whylen)
{
    char url[400];
    gbuf b = GBUF_INIT(IDLE_HTTP_CAP);
    jsonl_tok *tok = NULL;
    jsonl_doc d;
    uint64_t v;
    int err;

    memset(out, 0, sizeof out[0]);
    out->connections = -1;
    tok = malloc(IDLE_JSON_TOKENS * sizeof *tok);
    if (!tok) {
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    jsonl_doc_init(&d, tok, IDLE_JSON_TOKENS);
    snprintf(url, sizeof url, "%s/api/status", base);
    err = http_do(url, token, ca_file, NULL, &b, why, whylen);
    if (err)
        goto out;
    if (jsonl_doc_parse_obj(&d, gbuf_str(&b), b.len)) {
        snprintf(why, whylen, "/api/status: not a JSON object");
        err = GPUFL_EPARSE;
        goto out;
    }
    if (jsonl_tok_u64(&d, jsonl_doc_find(&d, "connections"), &v) == 0)
        out->connections = (int)(v > 100000 ? 100000 : v);
    gbuf_reset(&b);
    snprintf(url, sizeof url, "%s/api/kernels", base);
    err = http_do(url, token, ca_file, NULL, &b, why, whylen);
    if (err)
        goto out;
    if (jsonl_doc_parse(&d, gbuf_str(&b), b.len) ||
        jsonl_tok_type(&d, 0) != JSONL_ARRAY) {
        snprintf(why, whylen, "/api/kernels: not a JSON array");
        err = GPUFL_EPARSE;
        goto out;
    }
    for (uint32_t i = 1, k = 0; k < d.tok[0].n; k++, i = d.tok[i].next) {
        uint32_t st = jsonl_obj_find(&d, i, "execution_state");
        uint64_t la = tok_time(&d, jsonl_obj_find(&d, i, "last_activity"));
        out->kernels++;
        if (jsonl_tok_streq(&d, st, "busy", 4))
            out->busy++;
        if (la > out->last_activity_ns)
            out->last_activity_ns = la;
    }
out:
    free(tok);
    gbuf_release(&b);
    return err;
}

/* 'DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-..",...} 0.62' */
static void dcgm_line(const char *line, idle_gpu *gpus, int ngpus)
{
    int sm = !strncmp(line, "DCGM_FI_PROF_SM_ACTIVE{", 23);
    int gr = !strncmp(line, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{", 30);
    const char *u, *gi, *end;
    double v;
    if (!sm && !gr)
        return;
    end = strchr(line, '}');
    if (!end)
        return;
    v = strtod(end + 1, NULL);
    u = strstr(line, "UUID=\"");
    gi = strstr(line, "GPU_I_ID=\"");
    if (gi && gi > end)
        gi = NULL;
    for (int i = 0; i < ngpus; i++) {
        size_t n = strlen(gpus[i].info.uuid);
        int match;
        if (u && n)
            match = !strncmp(u + 6, gpus[i].info.uuid, n) && u[6 + n] == '"';
        else {
            char want[24];
            snprintf(want, sizeof want, "gpu=\"%u\"", gpus[i].info.id);
            match = strstr(line, want) && strstr(line, want) < end;
        }
        /* a MIG GPU instance takes its own row (GPU_I_ID, as dcgm-exporter
         * labels them); a whole GPU the row without an instance */
        if (match && gpus[i].info.mig) {
            char want[24];
            int k =
                snprintf(want, sizeof want, "GPU_I_ID=\"%u\"", gpus[i].info.gi);
            match = gi && !strncmp(gi, want, (size_t)k);
        } else if (match) {
            match = !gi || gi[10] == '"';
        }
        if (!match)
            continue;
        if (sm)
            gpus[i].dcgm_sm = v;
        else
            gpus[i].dcgm_gr = v;
    }
}

void idle_dcgm_parse(const char *text, size_t len, idle_gpu *gpus, int ngpus)
{
    char line[2048];
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
        /* longer lines are not DCGM samples we read */
        if (ll < sizeof line) {
            memcpy(line, text + pos, ll);
            line[ll] = 0;
            dcgm_line(line, gpus, ngpus);
        }
        pos += ll + (nl != NULL);
    }
}

int idle_dcgm_scrape(const char *url, const char *ca_file, idle_gpu *gpus,
                     int ngpus, char *why, size_t whylen)
{
    gbuf b = GBUF_INIT(IDLE_HTTP_CAP);
    int err = http_do(url, NULL, ca_file, NULL, &b, why, whylen);
    for (int i = 0; i < ngpus; i++)
        gpus[i].dcgm_sm = gpus[i].dcgm_gr = -1;
    if (!err && b.p)
        idle_dcgm_parse(b.p, b.len, gpus, ngpus);
    gbuf_release(&b);
    return err;
}

int idle_http_post(const char *url, const char *ca_file, const char *body,
                   char *why, size_t whylen)
{
    gbuf b = GBUF_INIT(IDLE_HTTP_CAP);
    int err = http_do(url, NULL, ca_file, body, &b, why, whylen);
    gbuf_release(&b);
    return err;
}
