/*
 * receiver.c - the test receiver for gpufl-agent: speaks the server's
 * ingest contract (POST {base}/device|scope|system, NDJSON, optional zstd
 * or gzip, Bearer token, 200 {"accepted","duplicate","rejected","errors"})
 * and records every line it acknowledges, once per (sid, st, seq).
 *
 * It fails on command, so tests can break it on purpose:
 *   POST /ctl  body "ok" | "503" | "hang" | "reject=SUBSTR" | "max=BYTES"
 *              | "html" | "empty" | "cut" | "count" | "errmax=N"
 *   GET  /stats  {"lines","dups","mismatch","requests","rejected",...}
 * "hang" holds each request until the mode changes, then answers 503;
 * "html", "empty", "cut" and "count" answer 200 without storing anything,
 * with what is not an acknowledgement: a web page (a wrong URL, a proxy),
 * no body, JSON cut short, counts one line short.  "errmax=N" names at
 * most N errors and says how many more in "errors_truncated", as the
 * server does (with 50);
 * "going down" is the test killing this process and starting another on
 * the same port with the same --out file (it reloads what it recorded).
 * "mismatch" counts re-sent lines whose bytes differ from the first copy:
 * a duplicate must be a re-send of the same line.
 *
 * usage: agent_receiver --out FILE [--port N] [--port-file F]
 *                       [--token T] [--count-only]
 * --count-only (benchmarks) counts lines without parsing or recording.
 */
#include "common/jsonl.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define RECV_BODY_MAX (512u << 20)

typedef struct conn {
    char *buf;
    size_t len, cap;
    int too_big;
} conn;

static struct {
    pthread_mutex_t lock;
    FILE *out;
    char *token;
    int count_only;
    char mode[64];
    char reject[256];
    size_t max_body;
    uint64_t errmax;
    uint64_t lines, dups, mismatch, requests, rejected, bytes, status503;
    /* (sid, st, seq) hash -> line hash, open addressing; key 0 = empty */
    uint64_t *keys, *vals;
    size_t cap, n;
    volatile sig_atomic_t stop;
} R = { PTHREAD_MUTEX_INITIALIZER };

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void set_grow(void);

/* Returns 0 new, 1 duplicate (same bytes), 2 duplicate with other bytes. */
static int set_add(uint64_t k, uint64_t v)
{
    size_t i;
    if (k == 0)
        k = 1;
    if ((R.n + 1) * 2 > R.cap)
        set_grow();
    for (i = k & (R.cap - 1); R.keys[i]; i = (i + 1) & (R.cap - 1))
        if (R.keys[i] == k)
            return R.vals[i] == v ? 1 : 2;
    R.keys[i] = k;
    R.vals[i] = v;
    R.n++;
    return 0;
}

static void set_grow(void)
{
    size_t ocap = R.cap;
    uint64_t *ok = R.keys, *ov = R.vals;
    R.cap = ocap ? ocap * 2 : 1 << 16;
    R.keys = calloc(R.cap, sizeof *R.keys);
    R.vals = calloc(R.cap, sizeof *R.vals);
    if (!R.keys || !R.vals)
        abort();
    R.n = 0;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i])
            set_add(ok[i], ov[i]);
    free(ok);
    free(ov);
}

/* Key of a line: 0 if it is not an event line. */
static uint64_t line_key(jsonl_doc *d, const char *line, size_t n,
                         const char **why)
{
    uint32_t sid, st, seq;
    uint64_t k;
    if (jsonl_doc_parse_obj(d, line, n)) {
        *why = "not a JSON object";
        return 0;
    }
    sid = jsonl_doc_find(d, "sid");
    st = jsonl_doc_find(d, "st");
    seq = jsonl_doc_find(d, "seq");
    if (jsonl_tok_type(d, sid) != JSONL_STRING ||
        jsonl_tok_type(d, st) != JSONL_STRING ||
        jsonl_tok_type(d, seq) != JSONL_NUMBER) {
        *why = "missing sid, st or seq";
        return 0;
    }
    k = fnv(line + d->tok[sid].off, d->tok[sid].len, 14695981039346656037ull);
    k = fnv("/", 1, k);
    k = fnv(line + d->tok[st].off, d->tok[st].len, k);
    k = fnv("/", 1, k);
    k = fnv(line + d->tok[seq].off, d->tok[seq].len, k);
    return k ? k : 1;
}

static void load_out(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    jsonl_tok *tok = malloc(65536 * sizeof *tok);
    jsonl_doc d;
    const char *why;

    if (!f || !tok) {
        free(tok);
        if (f)
            fclose(f);
        return;
    }
    jsonl_doc_init(&d, tok, 65536);
    while ((n = getline(&line, &cap, f)) > 0) {
        uint64_t k;
        if (line[n - 1] != '\n')
            break;
        k = line_key(&d, line, (size_t)n - 1, &why);
        if (k) {
            set_add(k, fnv(line, (size_t)n - 1, 14695981039346656037ull));
            R.lines++;
        }
    }
    free(line);
    free(tok);
    fclose(f);
}

static int decode(const char *enc, const char *in, size_t n, char **out,
                  size_t *out_len)
{
    size_t cap = n * 4 + 65536, len = 0;
    char *b = malloc(cap);
    if (!b)
        return -1;
    if (enc && !strcmp(enc, "zstd")) {
        ZSTD_DStream *ds = ZSTD_createDStream();
        ZSTD_inBuffer ib = { in, n, 0 };
        while (ib.pos < ib.size) {
            ZSTD_outBuffer ob;
            size_t r;
            if (cap - len < 65536) {
                char *g;
                cap *= 2;
                if (cap > RECV_BODY_MAX || !(g = realloc(b, cap)))
                    goto zfail;
                b = g;
            }
            ob.dst = b + len;
            ob.size = cap - len;
            ob.pos = 0;
            r = ZSTD_decompressStream(ds, &ob, &ib);
            if (ZSTD_isError(r))
                goto zfail;
            len += ob.pos;
        }
        ZSTD_freeDStream(ds);
        *out = b;
        *out_len = len;
        return 0;
    zfail:
        ZSTD_freeDStream(ds);
        free(b);
        return -1;
    }
    if (enc && !strcmp(enc, "gzip")) {
        z_stream z;
        int r;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 15 + 16)) {
            free(b);
            return -1;
        }
        z.next_in = (Bytef *)(uintptr_t)in;
        z.avail_in = (uInt)n;
        do {
            if (cap - len < 65536) {
                char *g;
                cap *= 2;
                if (cap > RECV_BODY_MAX || !(g = realloc(b, cap))) {
                    inflateEnd(&z);
                    free(b);
                    return -1;
                }
                b = g;
            }
            z.next_out = (Bytef *)b + len;
            z.avail_out = (uInt)(cap - len);
            r = inflate(&z, Z_NO_FLUSH);
            len = z.total_out;
        } while (r == Z_OK);
        inflateEnd(&z);
        if (r != Z_STREAM_END) {
            free(b);
            return -1;
        }
        *out = b;
        *out_len = len;
        return 0;
    }
    free(b);
    *out = NULL;
    *out_len = n;
    return 1; /* identity: use the input */
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             const char *body, size_t n)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        n, (void *)(uintptr_t)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result ret;
    MHD_add_response_header(r, "Content-Type", "application/json");
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result control(struct MHD_Connection *c, const char *cmd,
                               size_t n)
{
    char b[300];
    if (n >= sizeof b)
        return reply(c, 400, "{}", 2);
    memcpy(b, cmd, n);
    b[n] = '\0';
    pthread_mutex_lock(&R.lock);
    if (!strncmp(b, "reject=", 7)) {
        snprintf(R.reject, sizeof R.reject, "%.200s", b + 7);
    } else if (!strncmp(b, "max=", 4)) {
        R.max_body = (size_t)strtoull(b + 4, NULL, 10);
    } else if (!strncmp(b, "errmax=", 7)) {
        R.errmax = strtoull(b + 7, NULL, 10);
    } else {
        snprintf(R.mode, sizeof R.mode, "%.32s", b);
        R.reject[0] = '\0';
    }
    pthread_mutex_unlock(&R.lock);
    return reply(c, 200, "{\"ok\":true}", 11);
}

static enum MHD_Result stats(struct MHD_Connection *c)
{
    char b[512];
    int n;
    pthread_mutex_lock(&R.lock);
    n = snprintf(b, sizeof b,
                 "{\"lines\":%llu,\"dups\":%llu,\"mismatch\":%llu,"
                 "\"requests\":%llu,\"rejected\":%llu,\"bytes\":%llu,"
                 "\"status503\":%llu}",
                 (unsigned long long)R.lines, (unsigned long long)R.dups,
                 (unsigned long long)R.mismatch, (unsigned long long)R.requests,
                 (unsigned long long)R.rejected, (unsigned long long)R.bytes,
                 (unsigned long long)R.status503);
    pthread_mutex_unlock(&R.lock);
    return reply(c, 200, b, (size_t)n);
}

static enum MHD_Result ingest(struct MHD_Connection *c, const char *stream,
                              conn *k)
{
    const char *enc =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    const char *auth =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    char *dec = NULL, *resp = NULL, mode[64];
    const char *body;
    size_t len, rcap, rlen = 0, pos = 0, nl;
    const char *line;
    uint64_t acc = 0, dup = 0, rej = 0, lineno = 0, cnt = 0;
    int rc;
    enum MHD_Result ret;
    jsonl_tok *tok = NULL;
    jsonl_doc d;

    if (strcmp(stream, "device") && strcmp(stream, "scope") &&
        strcmp(stream, "system"))
        return reply(c, 404, "{\"error\":\"unknown stream\"}", 26);
    if (R.token) {
        char want[512];
        snprintf(want, sizeof want, "Bearer %s", R.token);
        if (!auth || strcmp(auth, want))
            return reply(c, 401, "{\"error\":\"unauthorized\"}", 24);
    }
    pthread_mutex_lock(&R.lock);
    R.requests++;
    snprintf(mode, sizeof mode, "%s", R.mode);
    pthread_mutex_unlock(&R.lock);
    if (!strcmp(mode, "hang")) {
        for (int i = 0; i < 600 && !R.stop; i++) {
            usleep(100000);
            pthread_mutex_lock(&R.lock);
            rc = strcmp(R.mode, "hang");
            pthread_mutex_unlock(&R.lock);
            if (rc)
                break;
        }
        mode[0] = '5';
        mode[1] = '\0';
    }
    if (mode[0] == '5') {
        pthread_mutex_lock(&R.lock);
        R.status503++;
        pthread_mutex_unlock(&R.lock);
        return reply(c, 503, "{\"error\":\"unavailable\"}", 23);
    }
    rc = decode(enc, k->buf, k->len, &dec, &len);
    if (rc < 0)
        return reply(c, 400, "{\"error\":\"bad encoding\"}", 24);
    body = rc == 0 ? dec : k->buf;
    if (!strcmp(mode, "html") || !strcmp(mode, "empty") ||
        !strcmp(mode, "cut") || !strcmp(mode, "count")) {
        static const char html[] = "<!DOCTYPE html><html><body><h1>Welcome "
                                   "to nginx!</h1></body></html>\n";
        static const char cut[] = "{\"errors\":[],\"accepted\":1";
        char b[160];
        int n = 0;
        for (const char *p = body;
             (p = memchr(p, '\n', len - (size_t)(p - body))); p++)
            cnt++;
        if (!strcmp(mode, "count"))
            n = snprintf(b, sizeof b,
                         "{\"errors\":[],\"accepted\":%llu,\"duplicate\":0,"
                         "\"rejected\":0}",
                         (unsigned long long)(cnt ? cnt - 1 : 1));
        free(dec);
        if (!strcmp(mode, "html"))
            return reply(c, 200, html, sizeof html - 1);
        if (!strcmp(mode, "cut"))
            return reply(c, 200, cut, sizeof cut - 1);
        return reply(c, 200, b, (size_t)n);
    }
    if (R.max_body && len > R.max_body) {
        free(dec);
        return reply(c, 413, "{\"error\":\"too big\"}", 19);
    }
    if (R.count_only) {
        for (const char *p = body;
             (p = memchr(p, '\n', len - (size_t)(p - body))); p++)
            cnt++;
        pthread_mutex_lock(&R.lock);
        R.lines += cnt;
        R.bytes += len;
        pthread_mutex_unlock(&R.lock);
        free(dec);
        {
            char b[128];
            int n = snprintf(b, sizeof b,
                             "{\"accepted\":%llu,\"duplicate\":0,"
                             "\"rejected\":0,\"errors\":[]}",
                             (unsigned long long)cnt);
            return reply(c, 200, b, (size_t)n);
        }
    }
    tok = malloc(65536 * sizeof *tok);
    rcap = 65536;
    resp = malloc(rcap);
    if (!tok || !resp) {
        free(tok);
        free(resp);
        free(dec);
        return reply(c, 500, "{}", 2);
    }
    jsonl_doc_init(&d, tok, 65536);
    rlen = (size_t)snprintf(resp, rcap, "{\"errors\":[");
    pthread_mutex_lock(&R.lock);
    while (jsonl_line_next(body, len, &pos, &line, &nl)) {
        const char *why = NULL;
        uint64_t key;
        lineno++;
        if (R.reject[0] && memmem(line, nl, R.reject, strlen(R.reject)))
            why = "rejected on command";
        key = why ? 0 : line_key(&d, line, nl, &why);
        if (key && (d.tok[jsonl_doc_find(&d, "st")].len != strlen(stream) ||
                    memcmp(line + d.tok[jsonl_doc_find(&d, "st")].off, stream,
                           strlen(stream))))
            why = "st does not match the URL", key = 0;
        if (!key) {
            rej++;
            if (R.errmax && rej > R.errmax)
                continue;
            if (rcap - rlen < 256) {
                char *g = realloc(resp, rcap * 2);
                if (!g)
                    abort();
                resp = g;
                rcap *= 2;
            }
            rlen += (size_t)snprintf(
                resp + rlen, rcap - rlen, "%s{\"line\":%llu,\"reason\":\"%s\"}",
                rej > 1 ? "," : "", (unsigned long long)lineno, why);
            continue;
        }
        switch (set_add(key, fnv(line, nl, 14695981039346656037ull))) {
        case 0:
            acc++;
            fwrite(line, 1, nl, R.out);
            fputc('\n', R.out);
            break;
        case 2: R.mismatch++; /* fall through */
        default: dup++;
        }
    }
    fflush(R.out);
    R.lines += acc;
    R.dups += dup;
    R.rejected += rej;
    R.bytes += len;
    pthread_mutex_unlock(&R.lock);
    if (rcap - rlen < 256) {
        char *g = realloc(resp, rcap + 256);
        if (!g)
            abort();
        resp = g;
        rcap += 256;
    }
    rlen += (size_t)snprintf(
        resp + rlen, rcap - rlen,
        "],\"accepted\":%llu,\"duplicate\":%llu,\"rejected\":%llu",
        (unsigned long long)acc, (unsigned long long)dup,
        (unsigned long long)rej);
    if (R.errmax && rej > R.errmax)
        rlen += (size_t)snprintf(resp + rlen, rcap - rlen,
                                 ",\"errors_truncated\":%llu",
                                 (unsigned long long)(rej - R.errmax));
    rlen += (size_t)snprintf(resp + rlen, rcap - rlen, "}");
    ret = reply(c, 200, resp, rlen);
    free(resp);
    free(tok);
    free(dec);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *size, void **ctx)
{
    conn *k = *ctx;
    const char *slash;
    (void)cls;
    (void)version;

    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k)
            return MHD_NO;
        *ctx = k;
        return MHD_YES;
    }
    if (*size) {
        if (k->len + *size > RECV_BODY_MAX) {
            k->too_big = 1;
        } else {
            if (k->len + *size > k->cap) {
                size_t cap = k->cap ? k->cap : 65536;
                char *g;
                while (cap < k->len + *size)
                    cap *= 2;
                g = realloc(k->buf, cap);
                if (!g)
                    return MHD_NO;
                k->buf = g;
                k->cap = cap;
            }
            memcpy(k->buf + k->len, data, *size);
            k->len += *size;
        }
        *size = 0;
        return MHD_YES;
    }
    if (!strcmp(url, "/stats"))
        return stats(c);
    if (!strcmp(url, "/ctl"))
        return control(c, k->buf ? k->buf : "", k->len);
    if (strcmp(method, "POST"))
        return reply(c, 405, "{}", 2);
    if (k->too_big)
        return reply(c, 413, "{}", 2);
    slash = strrchr(url, '/');
    return ingest(c, slash ? slash + 1 : url, k);
}

static void done_cb(void *cls, struct MHD_Connection *c, void **ctx,
                    enum MHD_RequestTerminationCode toe)
{
    conn *k = *ctx;
    (void)cls;
    (void)c;
    (void)toe;
    if (k) {
        free(k->buf);
        free(k);
    }
    *ctx = NULL;
}

static void on_term(int sig)
{
    (void)sig;
    R.stop = 1;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *port_file = NULL;
    unsigned port = 0;
    struct sockaddr_in sin;
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;

    snprintf(R.mode, sizeof R.mode, "ok");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--port") && i + 1 < argc)
            port = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--port-file") && i + 1 < argc)
            port_file = argv[++i];
        else if (!strcmp(argv[i], "--token") && i + 1 < argc)
            R.token = argv[++i];
        else if (!strcmp(argv[i], "--count-only"))
            R.count_only = 1;
        else {
            fprintf(stderr, "usage: see receiver.c\n");
            return 2;
        }
    }
    if (!out && !R.count_only)
        return 2;
    if (out) {
        load_out(out);
        R.out = fopen(out, "ab");
        if (!R.out)
            return 1;
    }
    if (!R.cap)
        set_grow();
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, (uint16_t)port, NULL,
        NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, &sin,
        MHD_OPTION_NOTIFY_COMPLETED, done_cb, NULL, MHD_OPTION_THREAD_POOL_SIZE,
        4u, MHD_OPTION_CONNECTION_TIMEOUT, 120u,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "receiver: cannot listen on port %u\n", port);
        return 1;
    }
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (port_file) {
        char tmp[4200];
        FILE *f;
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        f = fopen(tmp, "w");
        if (!f)
            return 1;
        fprintf(f, "%u\n", (unsigned)info->port);
        fclose(f);
        rename(tmp, port_file);
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    while (!R.stop)
        pause();
    MHD_stop_daemon(d);
    if (R.out)
        fclose(R.out);
    free(R.keys);
    free(R.vals);
    return 0;
}
