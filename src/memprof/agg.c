/*
 * agg.c - events into stacks: frame names are interned at event time (the
 * process may be gone when the profile is written), a stack is keyed by
 * (pid, API, frame names), and each stack keeps allocated / freed / failed
 * totals plus its in-use bytes.  Frees are matched through the per-process
 * live table (ptr -> size, stack) and credited to the allocating stack;
 * VMM memory is counted at cuMemCreate and released at cuMemRelease once
 * no mapping of the handle remains; cuCtxDestroy and process exit free
 * what is left (implicit frees, counted per process).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "memprof_int.h"

#define MP_MAX_STACKS (1u << 20)
#define MP_MAX_NAMES (1u << 22)
#define MP_MAPS_CAP (8u << 20)

/* the record's layout is shared with the BPF program and the preload
 * pipe (and the fuzz corpus): a change must be deliberate */
_Static_assert(sizeof(struct mp_event) == 1136, "struct mp_event layout");

/* ---- u64 map ---- */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

void mp_u64map_release(mp_u64map *m)
{
    free(m->key);
    free(m->a);
    free(m->b);
    free(m->st);
    memset(m, 0, sizeof *m);
}

static size_t slot(const mp_u64map *m, uint64_t k, int for_insert)
{
    size_t i = mix64(k) & (m->cap - 1), tomb = SIZE_MAX;
    for (;;) {
        if (m->st[i] == 0)
            return for_insert && tomb != SIZE_MAX ? tomb : i;
        if (m->st[i] == 2) {
            if (tomb == SIZE_MAX)
                tomb = i;
        } else if (m->key[i] == k) {
            return i;
        }
        i = (i + 1) & (m->cap - 1);
    }
}

int mp_u64map_get(const mp_u64map *m, uint64_t k, uint64_t *a, uint64_t *b)
{
    if (!m->cap)
        return 0;
    size_t i = slot(m, k, 0);
    if (m->st[i] != 1)
        return 0;
    if (a)
        *a = m->a[i];
    if (b)
        *b = m->b[i];
    return 1;
}

static int grow(mp_u64map *m)
{
    mp_u64map n = { 0 };
    n.cap = m->cap ? (m->n * 4 > m->cap ? m->cap * 2 : m->cap) : 64;
    n.key = malloc(n.cap * sizeof *n.key);
    n.a = malloc(n.cap * sizeof *n.a);
    n.b = malloc(n.cap * sizeof *n.b);
    n.st = calloc(n.cap, 1);
    if (!n.key || !n.a || !n.b || !n.st) {
        mp_u64map_release(&n);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->st[i] == 1) {
            size_t j = slot(&n, m->key[i], 1);
            n.st[j] = 1;
            n.key[j] = m->key[i];
            n.a[j] = m->a[i];
            n.b[j] = m->b[i];
            n.n++;
        }
    n.used = n.n;
    mp_u64map_release(m);
    *m = n;
    return 0;
}

int mp_u64map_put(mp_u64map *m, uint64_t k, uint64_t a, uint64_t b)
{
    if ((m->used + 1) * 2 > m->cap && grow(m))
        return -1;
    size_t i = slot(m, k, 1);
    if (m->st[i] != 1) {
        if (m->st[i] == 0)
            m->used++;
        m->st[i] = 1;
        m->key[i] = k;
        m->n++;
    }
    m->a[i] = a;
    m->b[i] = b;
    return 0;
}

int mp_u64map_del(mp_u64map *m, uint64_t k)
{
    if (!m->cap)
        return 0;
    size_t i = slot(m, k, 0);
    if (m->st[i] != 1)
        return 0;
    m->st[i] = 2;
    m->n--;
    return 1;
}

/* ---- names ---- */
static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

static uint32_t name_intern(mp_agg *g, const char *s)
{
    if (g->nnames * 2 >= g->name_cap) {
        if (g->nnames >= MP_MAX_NAMES)
            return 0;
        size_t cap = g->name_cap ? g->name_cap * 2 : 1024;
        uint32_t *idx = calloc(cap, sizeof *idx);
        if (!idx)
            return 0;
        for (size_t i = 0; i < g->nnames; i++) {
            size_t j =
                fnv(g->names[i], strlen(g->names[i]), 0xcbf29ce484222325ULL) &
                (cap - 1);
            while (idx[j])
                j = (j + 1) & (cap - 1);
            idx[j] = (uint32_t)i + 1;
        }
        free(g->name_idx);
        g->name_idx = idx;
        g->name_cap = cap;
    }
    size_t j = fnv(s, strlen(s), 0xcbf29ce484222325ULL) & (g->name_cap - 1);
    while (g->name_idx[j]) {
        if (!strcmp(g->names[g->name_idx[j] - 1], s))
            return g->name_idx[j] - 1;
        j = (j + 1) & (g->name_cap - 1);
    }
    if (g->nnames == g->capnames) {
        size_t c = g->capnames ? g->capnames * 2 : 1024;
        char **nv = realloc(g->names, c * sizeof *nv);
        if (!nv)
            return 0;
        g->names = nv;
        g->capnames = c;
    }
    char *d = strdup(s);
    if (!d)
        return 0;
    /* folded text separates frames with ';' and records with '\n' */
    for (char *c = d; *c; c++)
        if (*c == ';' || *c == '\n')
            *c = ':';
    g->names[g->nnames] = d;
    g->name_idx[j] = (uint32_t)g->nnames + 1;
    return (uint32_t)g->nnames++;
}

void mp_agg_init(mp_agg *g, int api_frame)
{
    memset(g, 0, sizeof *g);
    g->api_frame = api_frame;
    name_intern(g, "[unknown]"); /* id 0: also what a failed intern gives */
    for (int i = 0; i < MP_API_N; i++)
        name_intern(g, mp_apis[i].name);
}

void mp_agg_release(mp_agg *g)
{
    for (size_t i = 0; i < g->nnames; i++)
        free(g->names[i]);
    free(g->names);
    free(g->name_idx);
    for (size_t i = 0; i < g->nstacks; i++)
        free(g->stacks[i].f);
    free(g->stacks);
    free(g->stack_idx);
    for (size_t i = 0; i < g->nprocs; i++) {
        free(g->procs[i].maps);
        mp_u64map_release(&g->procs[i].live);
        mp_u64map_release(&g->procs[i].vmm);
        mp_u64map_release(&g->procs[i].va);
        mp_u64map_release(&g->procs[i].pycache);
    }
    free(g->procs);
    mp_symb_release(&g->symb);
    memset(g, 0, sizeof *g);
}

mp_proc *mp_agg_proc(mp_agg *g, uint32_t pid)
{
    for (size_t i = 0; i < g->nprocs; i++)
        if (g->procs[i].pid == pid && !g->procs[i].exited)
            return &g->procs[i];
    if (g->nprocs == g->capprocs) {
        size_t c = g->capprocs ? g->capprocs * 2 : 16;
        mp_proc *nv = realloc(g->procs, c * sizeof *nv);
        if (!nv)
            return NULL;
        g->procs = nv;
        g->capprocs = c;
    }
    mp_proc *p = &g->procs[g->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    return p;
}

void mp_agg_maps(mp_agg *g, uint32_t pid, const char *text, size_t len)
{
    mp_proc *p = mp_agg_proc(g, pid);
    if (!p)
        return;
    mp_map *m = NULL;
    long n = mp_symb_parse_maps(&g->symb, text, len, &m);
    if (n < 0)
        return;
    free(p->maps);
    p->maps = m;
    p->nmaps = (size_t)n;
}

void mp_agg_pyname(mp_agg *g, uint32_t pid, unsigned version, uint64_t code,
                   uint64_t instr, const char *name)
{
    mp_proc *p = mp_agg_proc(g, pid);
    const mp_pyver *v = mp_py_version(version);
    if (!p || !v)
        return;
    p->py = v;
    p->py_checked = 1;
    mp_u64map_put(&p->pycache, mp_py_key(code, instr), name_intern(g, name),
                  code);
}

static void read_maps(mp_agg *g, mp_proc *p)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/maps", p->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= MP_MAPS_CAP)
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf && n)
        mp_agg_maps(g, p->pid, buf, n);
    free(buf);
}

static int in_maps(const mp_proc *p, uint64_t ip)
{
    for (size_t i = 0; i < p->nmaps; i++)
        if (ip >= p->maps[i].start && ip < p->maps[i].end)
            return 1;
    return 0;
}

static uint32_t stack_get(mp_agg *g, uint32_t pid, uint32_t api,
                          const uint32_t *f, uint32_t n)
{
    uint64_t h = fnv(f, n * sizeof *f,
                     fnv(&pid, 4, fnv(&api, 4, 0xcbf29ce484222325ULL)));
    if (g->nstacks * 2 >= g->stack_cap) {
        if (g->nstacks >= MP_MAX_STACKS)
            return UINT32_MAX;
        size_t cap = g->stack_cap ? g->stack_cap * 2 : 1024;
        uint32_t *idx = calloc(cap, sizeof *idx);
        if (!idx)
            return UINT32_MAX;
        for (size_t i = 0; i < g->nstacks; i++) {
            size_t j = g->stacks[i].hash & (cap - 1);
            while (idx[j])
                j = (j + 1) & (cap - 1);
            idx[j] = (uint32_t)i + 1;
        }
        free(g->stack_idx);
        g->stack_idx = idx;
        g->stack_cap = cap;
    }
    size_t j = h & (g->stack_cap - 1);
    while (g->stack_idx[j]) {
        const mp_stack *s = &g->stacks[g->stack_idx[j] - 1];
        if (s->hash == h && s->pid == pid && s->api == api && s->n == n &&
            !memcmp(s->f, f, n * sizeof *f))
            return g->stack_idx[j] - 1;
        j = (j + 1) & (g->stack_cap - 1);
    }
    if (g->nstacks == g->capstacks) {
        size_t c = g->capstacks ? g->capstacks * 2 : 256;
        mp_stack *nv = realloc(g->stacks, c * sizeof *nv);
        if (!nv)
            return UINT32_MAX;
        g->stacks = nv;
        g->capstacks = c;
    }
    mp_stack *s = &g->stacks[g->nstacks];
    memset(s, 0, sizeof *s);
    s->f = malloc((n ? n : 1) * sizeof *f);
    if (!s->f)
        return UINT32_MAX;
    memcpy(s->f, f, n * sizeof *f);
    s->pid = pid;
    s->api = api;
    s->n = n;
    s->hash = h;
    g->stack_idx[j] = (uint32_t)g->nstacks + 1;
    return (uint32_t)g->nstacks++;
}

/* A native frame of the interpreter itself (libpython, the python
 * executable), or one the frame-pointer walk could not place. */
static int is_python_frame(mp_agg *g, const mp_proc *p, uint64_t ip)
{
    for (size_t i = 0; i < p->nmaps; i++)
        if (ip >= p->maps[i].start && ip < p->maps[i].end) {
            const char *b = g->symb.mods[p->maps[i].mod].base;
            return !strncmp(b, "libpython", 9) || !strncmp(b, "python", 6);
        }
    return 1;
}

static uint32_t event_stack(mp_agg *g, mp_proc *p, const struct mp_event *e)
{
    uint32_t f[MP_MAX_FRAMES];
    uint32_t n = e->nframes > MP_MAX_FRAMES ? MP_MAX_FRAMES : e->nframes;
    if (!p->nmaps || (n && !in_maps(p, e->ips[0]) && p->maps_tries < 3)) {
        /* a library loaded since the last read (dlopen) */
        p->maps_tries++;
        read_maps(g, p);
    }
    uint32_t npy = p->py && e->npy <= MP_MAX_PYFRAMES ? e->npy : 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        char buf[512];
        /* with Python frames: the native frames below the interpreter
         * (C extension, libffi), then the Python ones */
        if (npy && is_python_frame(g, p, e->ips[i]))
            break;
        mp_symb_name(&g->symb, (int)p->pid, p->maps, p->nmaps, e->ips[i], buf,
                     sizeof buf);
        f[k++] = name_intern(g, buf);
    }
    if (!npy)
        return stack_get(g, p->pid, e->api, f, k);
    uint32_t fp[MP_MAX_FRAMES + MP_MAX_PYFRAMES];
    memcpy(fp, f, k * sizeof *f);
    for (uint32_t i = 0; i < npy; i++) {
        uint64_t id, code;
        if (mp_py_skip(p->py, e->py_code[i], e->py_instr[i]))
            continue;
        uint64_t key = mp_py_key(e->py_code[i], e->py_instr[i]);
        if (!mp_u64map_get(&p->pycache, key, &id, &code) ||
            code != e->py_code[i]) {
            char buf[512];
            mp_py_frame_name((int)p->pid, p->py, e->py_code[i], e->py_instr[i],
                             buf, sizeof buf);
            id = name_intern(g, buf);
            mp_u64map_put(&p->pycache, key, id, e->py_code[i]);
        }
        fp[k++] = (uint32_t)id;
    }
    return stack_get(g, p->pid, e->api, fp, k);
}

/* e: the free that released it; NULL for an implicit release */
static void release(mp_agg *g, mp_proc *p, uint32_t sidx, uint64_t size,
                    const struct mp_event *e)
{
    if (sidx >= g->nstacks)
        return;
    mp_stack *s = &g->stacks[sidx];
    if (!e) {
        p->implicit_b += size;
        p->implicit_n++;
    } else {
        s->cum.free_b += size;
        s->cum.free_n++;
        if (g->hook)
            g->hook(g->hook_ctx, g, p, e, MP_REC_FREE, sidx, size);
    }
    s->inuse_b -= s->inuse_b < size ? s->inuse_b : size;
    s->inuse_n -= s->inuse_n ? 1 : 0;
}

/* context destroyed or process gone: everything it still holds */
static void release_all(mp_agg *g, mp_proc *p)
{
    for (size_t i = 0; i < p->live.cap; i++)
        if (p->live.st[i] == 1)
            release(g, p, (uint32_t)p->live.b[i], p->live.a[i], NULL);
    for (size_t i = 0; i < p->vmm.cap; i++)
        if (p->vmm.st[i] == 1)
            release(g, p, (uint32_t)p->vmm.b[i], p->vmm.a[i], NULL);
    mp_u64map_release(&p->live);
    mp_u64map_release(&p->vmm);
    mp_u64map_release(&p->va);
}

static void vmm_drop_if_done(mp_agg *g, mp_proc *p, uint64_t h,
                             const struct mp_event *e)
{
    uint64_t size, b;
    if (!mp_u64map_get(&p->vmm, h, &size, &b))
        return;
    uint64_t maps = (b >> 32) & 0x7fffffff;
    if ((b >> 63) && !maps) {
        release(g, p, (uint32_t)b, size, e);
        mp_u64map_del(&p->vmm, h);
    }
}

void mp_agg_event(mp_agg *g, const struct mp_event *e)
{
    g->events++;
    if (e->kind == MP_EV_EXIT) {
        for (size_t i = 0; i < g->nprocs; i++)
            if (g->procs[i].pid == e->pid && !g->procs[i].exited) {
                release_all(g, &g->procs[i]);
                g->procs[i].exited = 1;
                if (g->hook)
                    g->hook(g->hook_ctx, g, &g->procs[i], e, MP_REC_EXIT,
                            UINT32_MAX, 0);
            }
        return;
    }
    if (e->kind != MP_EV_CALL || e->api >= MP_API_N)
        return;
    mp_proc *p = mp_agg_proc(g, e->pid);
    if (!p)
        return;
    g->calls++;
    if (e->comm[0])
        memcpy(p->comm, e->comm, sizeof p->comm);
    p->comm[sizeof p->comm - 1] = 0;
    const mp_api_info *a = &mp_apis[e->api];
    uint64_t b, size;
    switch (a->op) {
    case MP_OP_ALLOC:
    case MP_OP_CREATE: {
        size = e->arg[1];
        if (e->api == MP_cuMemAllocPitch_v2 || e->api == MP_cuMemAllocPitch ||
            e->api == MP_cudaMallocPitch)
            size = e->rc == 0 ? e->out2 * e->arg[3] : e->arg[2] * e->arg[3];
        if (e->api == MP_cuMemAllocHost)
            size &= 0xffffffffu; /* legacy: unsigned int bytesize */
        uint32_t s = event_stack(g, p, e);
        if (s == UINT32_MAX)
            return;
        mp_stack *st = &g->stacks[s];
        if (e->rc != 0) {
            st->cum.fail_b += size;
            st->cum.fail_n++;
            if (g->hook)
                g->hook(g->hook_ctx, g, p, e, MP_REC_FAIL, s, size);
            return;
        }
        st->cum.alloc_b += size;
        st->cum.alloc_n++;
        if (g->hook)
            g->hook(g->hook_ctx, g, p, e, MP_REC_ALLOC, s, size);
        mp_u64map *m = a->op == MP_OP_CREATE ? &p->vmm : &p->live;
        uint64_t old, oldb;
        if (mp_u64map_get(m, e->out, &old, &oldb)) { /* missed free */
            release(g, p, (uint32_t)oldb, old, NULL);
        } else if (m->n >= MP_LIVE_MAX) {
            if (!p->untracked_n)
                glog_warn("agg",
                          "pid %u holds more than %u live blocks: later ones "
                          "are counted as allocated, not as in use",
                          p->pid, MP_LIVE_MAX);
            p->untracked_b += size;
            p->untracked_n++;
            return;
        }
        st->inuse_b += size;
        st->inuse_n++;
        if (mp_u64map_put(m, e->out, size, s)) {
            /* out of memory: not held, as above */
            st->inuse_b -= size;
            st->inuse_n--;
            p->untracked_b += size;
            p->untracked_n++;
        }
        return;
    }
    case MP_OP_FREE:
        if (e->rc != 0) {
            g->failed_frees++;
            return;
        }
        if (!e->arg[0])
            return; /* cuMemFree(0) */
        if (!mp_u64map_get(&p->live, e->arg[0], &size, &b)) {
            g->unmatched_frees++; /* allocated before we attached */
            return;
        }
        mp_u64map_del(&p->live, e->arg[0]);
        release(g, p, (uint32_t)b, size, e);
        return;
    case MP_OP_MAP:
        if (e->rc != 0 || !mp_u64map_get(&p->vmm, e->arg[3], &size, &b))
            return;
        mp_u64map_put(&p->vmm, e->arg[3], size, b + (1ULL << 32));
        mp_u64map_put(&p->va, e->arg[0], e->arg[3], e->arg[1]);
        return;
    case MP_OP_UNMAP: {
        uint64_t h;
        if (e->rc != 0 || !mp_u64map_get(&p->va, e->arg[0], &h, NULL))
            return;
        mp_u64map_del(&p->va, e->arg[0]);
        if (mp_u64map_get(&p->vmm, h, &size, &b) && ((b >> 32) & 0x7fffffff))
            mp_u64map_put(&p->vmm, h, size, b - (1ULL << 32));
        vmm_drop_if_done(g, p, h, e);
        return;
    }
    case MP_OP_RELEASE:
        if (e->rc != 0 || !mp_u64map_get(&p->vmm, e->arg[0], &size, &b))
            return;
        mp_u64map_put(&p->vmm, e->arg[0], size, b | (1ULL << 63));
        vmm_drop_if_done(g, p, e->arg[0], e);
        return;
    case MP_OP_CTX:
        if (e->rc == 0)
            release_all(g, p);
        return;
    }
}

void mp_stack_value(const mp_stack *st, int view, int delta, uint64_t *bytes,
                    uint64_t *count)
{
    const mp_counts *c = &st->cum, *o = &st->pushed;
    switch (view) {
    case MEMPROF_VIEW_INUSE:
        *bytes = st->inuse_b;
        *count = st->inuse_n;
        return;
    case MEMPROF_VIEW_FAIL:
        *bytes = c->fail_b - (delta ? o->fail_b : 0);
        *count = c->fail_n - (delta ? o->fail_n : 0);
        return;
    default:
        *bytes = c->alloc_b - (delta ? o->alloc_b : 0);
        *count = c->alloc_n - (delta ? o->alloc_n : 0);
    }
}

void mp_agg_mark(mp_agg *g)
{
    for (size_t i = 0; i < g->nstacks; i++)
        g->stacks[i].pushed = g->stacks[i].cum;
}
