/*
 * window.c - the flight recorder's in-memory window (see window.h).
 *
 * Layout: entries of [header][refs][text] padded to 8 bytes, written at
 * head and dropped at tail; an entry never wraps around the end of the
 * mapping: the bytes left there are skipped (a wrap header says so, or,
 * when fewer than a header's size are left, the skip is implied).  The
 * skipped bytes count as used until the entry after them is dropped, so
 * the window holds at most cap bytes, skips included.
 *
 * Crash reads (collector_crash) see [tail, tail + used) only: an append
 * drops what it must first, then writes the entry, then moves head and
 * used; a drop moves tail and used before the space is reused.
 */
#include "window.h"

#include <string.h>
#include <sys/mman.h>

#include <gpufl/gpufl.h>

typedef struct whdr {
    uint32_t len; /* text bytes */
    uint8_t stream;
    uint8_t nrefs;
    uint16_t wrap; /* 1: skip to the end of the mapping */
    uint64_t t;
} whdr;

_Static_assert(sizeof(whdr) == 16, "window headers are 16 bytes");

static struct {
    char *mem;
    uint64_t cap, age_ns;
    uint64_t head, tail, used; /* offsets into mem; bytes held */
    win_stats st;
} W;

static uint64_t entry_size(uint64_t nrefs, uint64_t len)
{
    return (sizeof(whdr) + nrefs * 4 + len + 7) & ~7ull;
}

int window_open(uint64_t cap, uint64_t age_ns)
{
    void *m;
    window_close();
    cap &= ~7ull;
    if (cap < WINDOW_MIN_BYTES || cap > WINDOW_MAX_BYTES)
        return GPUFL_EINVAL;
    /* reserved, not committed: pages are touched as the window grows */
    m = mmap(NULL, cap, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return GPUFL_ENOMEM;
    W.mem = m;
    W.cap = cap;
    W.age_ns = age_ns;
    window_reset();
    return 0;
}

void window_close(void)
{
    if (W.mem)
        munmap(W.mem, W.cap);
    memset(&W, 0, sizeof W);
}

int window_is_open(void)
{
    return W.mem != NULL;
}

/* The entry at off, skips followed: its offset, or cap when off is a
 * skip that runs to the end (the next entry is at 0). */
static uint64_t at_entry(uint64_t off, const whdr **h)
{
    if (W.cap - off < sizeof(whdr))
        return W.cap;
    *h = (const whdr *)(const void *)(W.mem + off);
    return (*h)->wrap ? W.cap : off;
}

/* Drop the oldest entry (and the skip before it). */
static void drop_oldest(int aged)
{
    const whdr *h = NULL;
    uint64_t off = at_entry(W.tail, &h), n;
    if (!W.used)
        return;
    if (off == W.cap) { /* a skip to the end: the entry is at 0 */
        W.used -= W.cap - W.tail;
        W.tail = 0;
        if (!W.used)
            return;
        off = at_entry(0, &h);
    }
    n = entry_size(h->nrefs, h->len);
    if (aged)
        W.st.aged[h->stream]++;
    else {
        W.st.evicted[h->stream]++;
        W.st.evicted_bytes[h->stream] += h->len;
    }
    W.st.lines[h->stream]--;
    W.st.bytes[h->stream] -= h->len;
    W.tail = off + n == W.cap ? 0 : off + n;
    W.used -= n;
    if (!W.used)
        W.head = W.tail = 0;
}

int window_append(int stream, uint64_t t, const uint32_t *refs, int nrefs,
                  const char *text, size_t len)
{
    uint64_t need = entry_size((uint64_t)nrefs, len), end, total;
    whdr h;
    if (!W.mem || stream < 0 || stream >= ST_COUNT || nrefs < 0 ||
        nrefs > WINDOW_MAX_REFS || need > W.cap || len > UINT32_MAX) {
        W.st.refused++;
        return GPUFL_ETOOBIG;
    }
    for (;;) {
        if (!W.used)
            W.head = W.tail = 0;
        end = W.cap - W.head;
        total = end < need ? end + need : need;
        if (W.cap - W.used >= total)
            break;
        drop_oldest(0);
    }
    if (end < need) { /* skip to the start: mark it when a header fits */
        if (end >= sizeof(whdr)) {
            memset(&h, 0, sizeof h);
            h.wrap = 1;
            memcpy(W.mem + W.head, &h, sizeof h);
        }
        W.head = 0;
        W.used += end;
    }
    memset(&h, 0, sizeof h);
    h.len = (uint32_t)len;
    h.stream = (uint8_t)stream;
    h.nrefs = (uint8_t)nrefs;
    h.t = t;
    memcpy(W.mem + W.head, &h, sizeof h);
    if (nrefs)
        memcpy(W.mem + W.head + sizeof h, refs, (size_t)nrefs * 4);
    memcpy(W.mem + W.head + sizeof h + (size_t)nrefs * 4, text, len);
    /* committed: visible to a reader from here */
    W.head = W.head + need == W.cap ? 0 : W.head + need;
    W.used += need;
    W.st.lines[stream]++;
    W.st.bytes[stream] += len;
    return 0;
}

void window_expire(uint64_t now)
{
    if (!W.mem || !W.age_ns || now < W.age_ns)
        return;
    while (W.used) {
        const whdr *h = NULL;
        uint64_t off = at_entry(W.tail, &h);
        if (off == W.cap)
            off = at_entry(0, &h);
        if (h->t >= now - W.age_ns)
            break;
        drop_oldest(1);
    }
}

uint64_t window_first(void)
{
    return 0;
}

int window_next(uint64_t *pos, win_entry *e)
{
    while (W.mem && *pos < W.used) {
        uint64_t off = (W.tail + *pos) % W.cap;
        const whdr *h = NULL;
        if (at_entry(off, &h) == W.cap) {
            *pos += W.cap - off;
            continue;
        }
        e->stream = h->stream;
        e->t = h->t;
        e->nrefs = h->nrefs;
        e->refs = (const uint32_t *)(const void *)(W.mem + off + sizeof *h);
        e->text = W.mem + off + sizeof *h + (size_t)h->nrefs * 4;
        e->len = h->len;
        *pos += entry_size(h->nrefs, h->len);
        return 1;
    }
    return 0;
}

void window_reset(void)
{
    uint64_t cap = W.cap, age = W.age_ns;
    W.head = W.tail = W.used = 0;
    memset(&W.st, 0, sizeof W.st);
    W.st.cap = cap;
    W.st.age_ns = age;
}

void window_stats(win_stats *out)
{
    *out = W.st;
    out->cap = W.cap;
    out->used = W.used;
    out->age_ns = W.age_ns;
    out->oldest = 0;
    if (W.used) {
        const whdr *h = NULL;
        if (at_entry(W.tail, &h) == W.cap)
            at_entry(0, &h);
        out->oldest = h->t;
    }
}
