/*
 * diff_load.c - one side of `gpufl diff` from log files: every session of
 * a folder, or one session named by its file prefix or one of its files,
 * read through the report's reader (reader.c) into the runs of a df_side
 * (src/analysis/diff.h): each kernel's duration under its name, each
 * scope instance's under its path.
 *
 * Names are looked up once per dictionary id (a table from id to series),
 * not once per line: the hot path is one array index and one push.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/diff.h"
#include "gpufl/gpufl.h"
#include "report.h"
#include "report_int.h"

typedef struct dl_state {
    df_group *g;
    uint32_t *kmap, nk; /* kernel name id -> series index + 1 */
    uint32_t *smap, ns; /* scope path id -> series index + 1 */
    int err;
} dl_state;

/* slot id of *map (grown to cover it, up to RPT_MAX_IDS); NULL past it or
 * out of memory (st->err says which) */
static uint32_t *slot(dl_state *st, uint32_t **map, uint32_t *n, uint64_t id)
{
    if (id >= RPT_MAX_IDS) {
        return NULL; /* the reader keeps no such id: nothing to name */
    }
    if (id >= *n) {
        uint32_t nn = *n ? *n : 256;
        uint32_t *m;
        while (nn <= id)
            nn *= 2;
        m = realloc(*map, nn * sizeof *m);
        if (!m) {
            st->err = GPUFL_ENOMEM;
            return NULL;
        }
        memset(m + *n, 0, (nn - *n) * sizeof *m);
        *map = m;
        *n = nn;
    }
    return &(*map)[id];
}

static int push(dl_state *st, uint32_t *sl, int kind, const char *name,
                size_t len, uint64_t dur)
{
    if (!*sl) {
        int e = 0;
        if (!df_group_add(st->g, kind, name, len, &e)) {
            st->err = e;
            return e;
        }
        *sl = (uint32_t)st->g->n;
    }
    st->err = df_series_push(st->g, &st->g->s[*sl - 1], (double)dur);
    return st->err;
}

static int visit(void *ud, rpt_ctx *c, const rpt_line *ln)
{
    dl_state *st = ud;
    jsonl_doc *d = ln->d;
    uint32_t *sl;
    if (ln->type == RT_KERNEL) {
        uint64_t cfg = rpt_tu64(d, ln->f[RF_CFG], 0), name;
        const char *s;
        size_t len;
        if (cfg) {
            const rpt_dict *l = rpt_dict_get(c, (uint32_t)cfg, DK_LAUNCH);
            name = l ? l->name : 0;
        } else {
            name = rpt_u64(d, "name", 0);
        }
        if (!name || !(sl = slot(st, &st->kmap, &st->nk, name)))
            return st->err;
        s = rpt_name(c, (uint32_t)name, &len);
        if (!len && !*sl)
            return 0; /* a name its dictionary line never gave */
        return push(st, sl, DF_KERNEL, s, len, rpt_tu64(d, ln->f[RF_DUR], 0));
    }
    if (ln->type == RT_SCOPE_END) {
        uint64_t path = rpt_u64(d, "path", 0);
        char buf[DF_NAME_MAX + 1];
        if (!path || !(sl = slot(st, &st->smap, &st->ns, path)))
            return st->err;
        if (!*sl && !rpt_dict_get(c, (uint32_t)path, DK_PATH))
            return 0; /* unknown path */
        buf[0] = 0;
        if (!*sl)
            rpt_path_str(c, (uint32_t)path, buf, sizeof buf);
        return push(st, sl, DF_SCOPE, buf, *sl ? 0 : strlen(buf),
                    rpt_u64(d, "dur", 0));
    }
    return 0;
}

/* dir and selector of path: a folder is itself with no selector; a file
 * or prefix "DIR/NAME[.STREAM.log...]" is DIR with NAME */
static int split_path(const char *path, char *dir, size_t dcap, char *sel,
                      size_t scap, int *is_dir)
{
    struct stat sb;
    const char *slash;
    char *p;
    *is_dir = !stat(path, &sb) && S_ISDIR(sb.st_mode);
    if (*is_dir) {
        snprintf(dir, dcap, "%s", path);
        sel[0] = 0;
        return 0;
    }
    slash = strrchr(path, '/');
    if (slash)
        snprintf(dir, dcap, "%.*s", (int)(slash - path) + (slash == path),
                 path);
    else
        snprintf(dir, dcap, ".");
    if ((size_t)snprintf(sel, scap, "%s", slash ? slash + 1 : path) >= scap)
        return -1;
    for (int s = 0; s < RPT_NST; s++) {
        char pat[24];
        snprintf(pat, sizeof pat, ".%s.log", rpt_stream_names[s]);
        if ((p = strstr(sel, pat)) && p != sel)
            *p = 0;
    }
    return sel[0] ? 0 : -1;
}

int rpt_diff_load(const char *path, df_side *side, FILE *log, char *err,
                  size_t errlen)
{
    rpt_folder fo;
    char dir[RPT_PATH_MAX], sel[RPT_PATH_MAX], *pick = NULL;
    int is_dir, rc;
    size_t npick;

    if (split_path(path, dir, sizeof dir, sel, sizeof sel, &is_dir)) {
        snprintf(err, errlen, "%s: not a folder nor a session's files", path);
        return GPUFL_EINVAL;
    }
    rc = rpt_folder_scan(dir, &fo, err, errlen);
    if (rc)
        return rc;
    rpt_folder_warn(&fo, log);
    pick = calloc(fo.n ? fo.n : 1, 1);
    if (!pick) {
        rc = GPUFL_ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    npick = rpt_folder_pick(&fo, is_dir ? NULL : sel, pick);
    if (!npick) {
        snprintf(err, errlen,
                 is_dir ? "no gpufl logs in %s" : "no session %s in %s",
                 is_dir ? dir : sel, dir);
        rc = GPUFL_ENOTFOUND;
        goto out;
    }
    for (size_t i = 0; i < fo.n && !rc; i++) {
        rpt_ctx c;
        dl_state st;
        int e = 0;
        if (!pick[i])
            continue;
        memset(&st, 0, sizeof st);
        st.g = df_side_add(side, fo.s[i].sid, &e);
        if (!st.g) {
            snprintf(err, errlen, "%s: %s", path,
                     e == GPUFL_EFULL ? "more sessions than a side may hold"
                                      : "out of memory");
            rc = e;
            break;
        }
        if (rpt_ctx_init(&c)) {
            snprintf(err, errlen, "out of memory");
            rc = GPUFL_ENOMEM;
            break;
        }
        rc = rpt_session_read(&c, &fo.s[i], visit, &st, err, errlen);
        if (st.err) {
            rc = st.err;
            snprintf(err, errlen, "%s: %s", fo.s[i].prefix,
                     rc == GPUFL_EFULL ? "more kernel names and scope paths "
                                         "than a session may hold"
                                       : "out of memory");
        }
        if (!rc && !st.g->id[0])
            snprintf(st.g->id, sizeof st.g->id, "%s", c.hdr.sid);
        if (!rc && df_group_finish(st.g)) {
            rc = GPUFL_ENOMEM;
            snprintf(err, errlen, "out of memory");
        }
        free(st.kmap);
        free(st.smap);
        rpt_ctx_release(&c);
    }
out:
    free(pick);
    rpt_folder_release(&fo);
    return rc;
}
