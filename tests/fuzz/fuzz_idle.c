/*
 * fuzz_idle.c - libFuzzer target for the idle detector's text parsers
 * (src/idle): /proc/net/tcp, dcgm-exporter's Prometheus text, Jupyter's
 * ISO 8601 times, cgroup paths turned into session names and the kubelet
 * device-plugin checkpoint (pod -> GPUs).  The first byte picks the
 * parser; the rest is its input.
 *
 * Oracles beyond "does not crash":
 *   - tcp: never more connections than lines;
 *   - dcgm: a GPU's value is either untouched (-1) or what a line said,
 *     and only GPUs named by UUID or index change;
 *   - iso: 0 or a time after 1970 that formats back to the same second;
 *   - cgroup: a derived name is non-empty and only [A-Za-z0-9._-];
 *   - kubelet: at most one allocation per GPU, each named "pod ...";
 *   - kern (gpufl device-log lines): the busy time read is a union, so
 *     never more than the span from the start to the newest completion.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idle/idle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_idle: %s:%d: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void fuzz_tcp(const char *p, size_t n)
{
    uint16_t ports[3] = { 22, 8888, 0 };
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += p[i] == '\n';
    FUZZ_ASSERT((size_t)idle_tcp_parse(p, n, ports, 3) <= lines * 3);
}

static void fuzz_dcgm(const char *p, size_t n)
{
    static idle_gpu g[2];
    memset(g, 0, sizeof g);
    snprintf(g[0].info.uuid, sizeof g[0].info.uuid, "GPU-a");
    g[0].dcgm_sm = g[0].dcgm_gr = g[1].dcgm_sm = g[1].dcgm_gr = -1;
    idle_dcgm_parse(p, n, g, 2);
    if (!memchr(p, '{', n)) /* every sample line names labels */
        for (int i = 0; i < 2; i++)
            FUZZ_ASSERT(g[i].dcgm_sm == -1 && g[i].dcgm_gr == -1);
}

static void fuzz_iso(const char *p, size_t n)
{
    char buf[128];
    uint64_t t;
    size_t k = n < sizeof buf - 1 ? n : sizeof buf - 1;
    memcpy(buf, p, k);
    buf[k] = 0;
    t = idle_iso_ns(buf);
    if (t) {
        time_t s = (time_t)(t / IDLE_NS);
        struct tm tm;
        char back[32];
        FUZZ_ASSERT(gmtime_r(&s, &tm) != NULL);
        strftime(back, sizeof back, "%Y-%m-%dT%H:%M:%S", &tm);
        (void)back;
    }
}

static void fuzz_cgroup(const char *p, size_t n)
{
    char buf[512];
    idle_sess_cfg c;
    size_t k = n < sizeof buf - 1 ? n : sizeof buf - 1;
    memcpy(buf, p, k);
    buf[k] = 0;
    if (idle_sess_from_cgroup(buf, &c) == 0) {
        FUZZ_ASSERT(c.name[0]);
        for (const char *q = c.name; *q; q++)
            FUZZ_ASSERT((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                        (*q >= '0' && *q <= '9') || strchr("._-", *q));
    }
}

static void fuzz_kubelet(const char *p, size_t n)
{
    static idle_gpu g[2];
    idle_env e;
    int k;
    memset(g, 0, sizeof g);
    memset(&e, 0, sizeof e);
    e.root = "/nonexistent-fuzz-root";
    g[1].info.id = 1;
    snprintf(g[0].info.uuid, sizeof g[0].info.uuid, "GPU-a");
    k = idle_kubelet_parse(&e, p, n, g, 2);
    FUZZ_ASSERT(k >= 0 && k <= 2);
    FUZZ_ASSERT(k == g[0].allocated + g[1].allocated);
    for (int i = 0; i < 2; i++)
        FUZZ_ASSERT(!g[i].allocated || !strncmp(g[i].alloc_what, "pod ", 4));
}

/* A device's busy time is a union: never more than the span since the
 * daemon looked.  The devices' sum may be (two busy at once: the corpus's
 * kern-two-devices, which the sum's oracle failed on). */
static void fuzz_kern(const char *p, size_t n)
{
    static idle_kern *k;
    uint64_t since = 1000, last = 0, all, sum = 0;
    if (!k && idle_kern_new(&k, "/nonexistent-fuzz-root"))
        abort();
    all = idle_kern_parse(k, p, n, since, -1, &last);
    FUZZ_ASSERT(all == 0 || last > since);
    for (int d = 0; d < IDLE_KERN_DEVS; d++) {
        uint64_t l = 0, busy = idle_kern_parse(k, p, n, since, d, &l);
        FUZZ_ASSERT(l == last);
        FUZZ_ASSERT(busy <= (last > since ? last - since : 0));
        sum += busy;
    }
    FUZZ_ASSERT(sum == all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data + 1;
    if (size < 1)
        return 0;
    /* the corpus's selector bytes are 0..5 and stay what they were */
    switch (data[0] % 6) {
    case 0: fuzz_tcp(p, size - 1); break;
    case 1: fuzz_dcgm(p, size - 1); break;
    case 2: fuzz_iso(p, size - 1); break;
    case 4: fuzz_kubelet(p, size - 1); break;
    case 5: fuzz_kern(p, size - 1); break;
    default: fuzz_cgroup(p, size - 1); break;
    }
    return 0;
}
