/*
 * import_dict.c - `gpufl import`'s dictionary and output lines: names
 * (interned by content), scope paths and launch configurations get gpufl
 * dictionary ids in a string-keyed table; each is written into an output
 * file before the first line that uses it (imp_define).  The original's
 * own dictionaries map (kind, original id) to our name ids.
 */
#include <stdlib.h>
#include <string.h>

#include "common/jw.h"
#include "import_int.h"

const char *const imp_channels[RPT_NST] = { "device", "scope", "system" };

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static ient *find(imp *m, const char *key)
{
    size_t i;
    if (!m->cap)
        return NULL;
    for (i = hash_str(key) & (m->cap - 1); m->e[i].key;
         i = (i + 1) & (m->cap - 1))
        if (!strcmp(m->e[i].key, key))
            return &m->e[i];
    return NULL;
}

static int grow(imp *m)
{
    size_t oc = m->cap, nc = oc ? oc * 2 : 1024;
    ient *ne = calloc(nc, sizeof *ne);
    ient **nb;
    if (!ne)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        size_t j;
        if (!m->e[i].key)
            continue;
        for (j = hash_str(m->e[i].key) & (nc - 1); ne[j].key;
             j = (j + 1) & (nc - 1))
            ;
        ne[j] = m->e[i];
    }
    free(m->e);
    m->e = ne;
    m->cap = nc;
    nb = realloc(m->byid, (nc + 1) * sizeof *nb);
    if (!nb)
        return -1;
    m->byid = nb;
    for (size_t i = 0; i < nc; i++)
        if (ne[i].key)
            m->byid[ne[i].id] = &ne[i];
    for (int s = 0; s < RPT_NST; s++) {
        uint8_t *d = realloc(m->def[s], nc + 1);
        if (!d)
            return -1;
        memset(d + (oc ? oc + 1 : 0), 0, nc + 1 - (oc ? oc + 1 : 0));
        m->def[s] = d;
    }
    return 0;
}

/* The id of key, defined by body when new; 0 on failure. */
uint32_t imp_intern(imp *m, const char *key, const char *body, uint32_t d0,
                    uint32_t d1)
{
    ient *e = find(m, key);
    size_t i;
    char *bd;
    if (e)
        return e->id;
    if ((m->ne + 1) * 2 > m->cap && grow(m))
        return 0;
    for (i = hash_str(key) & (m->cap - 1); m->e[i].key;
         i = (i + 1) & (m->cap - 1))
        ;
    bd = malloc(strlen(body) + 32);
    m->e[i].key = strdup(key);
    if (!bd || !m->e[i].key) {
        free(bd);
        free(m->e[i].key);
        m->e[i].key = NULL;
        return 0;
    }
    m->e[i].id = (uint32_t)++m->ne;
    /* the body starts with the id */
    snprintf(bd, strlen(body) + 32, "\"type\":\"dict\",\"id\":%u,%s",
             m->e[i].id, body);
    m->e[i].body = bd;
    m->e[i].dep[0] = d0;
    m->e[i].dep[1] = d1;
    m->byid[m->e[i].id] = &m->e[i];
    return m->e[i].id;
}

/* A JSON-escaped copy of s for building dict bodies. */
void imp_esc(char *out, size_t cap, const char *s, size_t n)
{
    char buf[8192];
    jw w;
    jw_init(&w, buf, sizeof buf);
    jw_strn(&w, s, n, sizeof buf / 7);
    snprintf(out, cap, "%.*s", (int)w.len, buf);
}

uint32_t imp_name_id(imp *m, const char *s, size_t n)
{
    char key[4200], body[8300], e[8200];
    if (!n)
        return 0;
    snprintf(key, sizeof key, "n:%.*s", (int)(n > 4096 ? 4096 : n), s);
    imp_esc(e, sizeof e, s, n > 4096 ? 4096 : n);
    snprintf(body, sizeof body, "\"kind\":\"name\",\"name\":%s", e);
    return imp_intern(m, key, body, 0, 0);
}

uint32_t imp_path_id(imp *m, uint32_t parent, uint32_t name, int depth)
{
    char key[64], body[128];
    snprintf(key, sizeof key, "p:%u:%u", parent, name);
    snprintf(body, sizeof body,
             "\"kind\":\"path\",\"parent\":%u,\"name\":%u,\"depth\":%d", parent,
             name, depth);
    return imp_intern(m, key, body, parent, name);
}

/* "a|b|c" (kernel_detail.user_scope) as a path id. */
uint32_t imp_path_of(imp *m, const char *s)
{
    uint32_t p = 0;
    int depth = 0;
    while (*s) {
        const char *bar = strchr(s, '|');
        size_t n = bar ? (size_t)(bar - s) : strlen(s);
        uint32_t nm = imp_name_id(m, s, n);
        if (nm)
            p = imp_path_id(m, p, nm, ++depth);
        s += n + (bar ? 1 : 0);
    }
    return p;
}

/* The original's dictionaries: (kind, orig id) -> our name id, in an open
 * addressing table (kernel rows look a name up each). */
static uint64_t okey(char kind, uint64_t orig)
{
    return (orig << 8 | (unsigned char)kind) * 0x9e3779b97f4a7c15ull;
}

void imp_odict_put(imp *m, char kind, uint64_t orig, uint32_t id)
{
    size_t i;
    if ((m->nod + 1) * 2 > m->odcap) {
        size_t nc = m->odcap ? m->odcap * 2 : 256, oc = m->odcap;
        odent *old = m->odict;
        odent *n = calloc(nc, sizeof *n);
        if (!n)
            return;
        m->odict = n;
        m->odcap = nc;
        m->nod = 0;
        for (size_t j = 0; j < oc; j++) {
            if (old[j].kind)
                imp_odict_put(m, old[j].kind, old[j].orig, old[j].id);
        }
        free(old);
    }
    for (i = okey(kind, orig) & (m->odcap - 1); m->odict[i].kind;
         i = (i + 1) & (m->odcap - 1))
        if (m->odict[i].kind == kind && m->odict[i].orig == orig) {
            m->odict[i].id = id;
            return;
        }
    m->odict[i].kind = kind;
    m->odict[i].orig = orig;
    m->odict[i].id = id;
    m->nod++;
}

uint32_t imp_odict_get(imp *m, char kind, uint64_t orig)
{
    if (!m->odcap)
        return 0;
    for (size_t i = okey(kind, orig) & (m->odcap - 1); m->odict[i].kind;
         i = (i + 1) & (m->odcap - 1))
        if (m->odict[i].kind == kind && m->odict[i].orig == orig)
            return m->odict[i].id;
    return 0;
}

/* ---- output ---------------------------------------------------------------- */

void imp_put_line(imp *m, int st, uint64_t ts, const char *body)
{
    fprintf(m->out[st],
            "{\"v\":1,\"sid\":\"%s\",\"st\":\"%s\",\"seq\":%llu,"
            "\"ts\":%llu,%s}\n",
            m->sid, imp_channels[st], (unsigned long long)m->seq[st]++,
            (unsigned long long)ts, body);
}

void imp_define(imp *m, int st, uint32_t id, uint64_t ts)
{
    ient *e;
    if (!id || id > m->ne || m->def[st][id])
        return;
    e = m->byid[id];
    imp_define(m, st, e->dep[0], ts);
    imp_define(m, st, e->dep[1], ts);
    m->def[st][id] = 1;
    imp_put_line(m, st, ts, e->body);
}

/* Starts an event body in m->w (no outer braces are kept). */
void imp_body_begin(imp *m, const char *type)
{
    jw_init(&m->w, m->line, sizeof m->line);
    jw_obj_begin(&m->w);
    jw_kv_str(&m->w, "type", type);
}

void imp_body_end(imp *m, int st, uint64_t ts, rpt_type t)
{
    jw_obj_end(&m->w);
    if (m->w.err || m->w.len < 2)
        return;
    m->line[m->w.len - 1] = 0; /* drop the closing brace */
    imp_put_line(m, st, ts, m->line + 1);
    m->counts[t]++;
}
