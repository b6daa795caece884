/*
 * import_files.c - `gpufl import`: which files of the original GPU Flight
 * client's logs to read, in which order (three generations of layout;
 * docs/report.md#gpufl-import).
 *
 *   v1.2+  <sid>/<ch>.<N>.log.gz (N = 1 oldest), <sid>/.tmp/<ch>.<N>.log
 *          (retired, not yet gzipped), <sid>/.tmp/<ch>.log (active);
 *          channels device, scope, system, sass.
 *   v1.0-1.1  <base>.<ch>.log (active) and <base>.<ch>.<i>.log.gz, i = 1
 *          the NEWEST (each rotation shifts i to i+1): read the highest i
 *          first, the active file last; channels device, scope, system.
 *   v0     <base>.<ch>.<idx>.log, idx from 0, channels kernel, scope,
 *          system: recognised and counted, not converted (the reference
 *          names v0's fields but not enough of its lines to convert them).
 *
 * zlib's gzread reads gzip and plain files alike.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "import_int.h"

const char *const imp_in_channels[IMP_NCH] = { "device", "scope", "system",
                                               "sass" };

void *imp_gzopen(const char *path)
{
    struct stat st;
    gzFile g;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            fprintf(stderr, "gpufl: cannot read %s: %s; skipped\n", path,
                    errno == ELOOP ? "a symbolic link (never followed)"
                                   : strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "gpufl: %s is not a regular file; skipped\n", path);
        close(fd);
        return NULL;
    }
    g = gzdopen(fd, "rb");
    if (!g)
        close(fd);
    return g;
}

void imp_flist_free(flist fl[IMP_NCH])
{
    for (int c = 0; c < IMP_NCH; c++) {
        for (size_t i = 0; i < fl[c].n; i++)
            free(fl[c].p[i]);
        free(fl[c].p);
        fl[c].p = NULL;
        fl[c].n = 0;
    }
}

static int flist_add(flist *f, const char *path)
{
    char **np = realloc(f->p, (f->n + 1) * sizeof *np);
    if (!np)
        return -1;
    f->p = np;
    if (!(np[f->n] = strdup(path)))
        return -1;
    f->n++;
    return 0;
}

/* ---- v1.2+: one folder per session --------------------------------------- */

static int num_cmp(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    const char *dx = strrchr(x, '/'), *dy = strrchr(y, '/');
    unsigned long long nx, ny;
    /* "<ch>.<N>.log[.gz]": by N; the active "<ch>.log" (no N) last */
    nx = strchr(dx + 1, '.') && sscanf(strchr(dx + 1, '.') + 1, "%llu", &nx)
             ? nx
             : ~0ull;
    ny = strchr(dy + 1, '.') && sscanf(strchr(dy + 1, '.') + 1, "%llu", &ny)
             ? ny
             : ~0ull;
    if (nx != ny)
        return nx < ny ? -1 : 1;
    return strcmp(x, y);
}

/* The files of one channel of a session folder, in order. */
static int channel_files(const char *sdir, const char *ch, flist *out)
{
    const char *sub[2] = { "", "/.tmp" };
    for (int s = 0; s < 2; s++) {
        char dpath[RPT_PATH_MAX];
        DIR *d;
        struct dirent *de;
        if ((size_t)snprintf(dpath, sizeof dpath, "%s%s", sdir, sub[s]) >=
                sizeof dpath ||
            !(d = opendir(dpath)))
            continue;
        while ((de = readdir(d))) {
            size_t cl = strlen(ch);
            const char *r = de->d_name + cl;
            char full[RPT_PATH_MAX];
            unsigned long long n;
            int ok;
            if (strncmp(de->d_name, ch, cl) || *r != '.')
                continue;
            ok = (s == 0 && sscanf(r, ".%llu.log", &n) == 1 &&
                  strstr(r, ".log.gz") && !strstr(r, ".part")) ||
                 (s == 1 &&
                  (!strcmp(r, ".log") || (sscanf(r, ".%llu.log", &n) == 1 &&
                                          !strcmp(strstr(r, ".log"), ".log"))));
            if (!ok)
                continue;
            if (s == 1 && strcmp(r, ".log")) {
                /* a retired window also published as .gz: read it once */
                char gz[RPT_PATH_MAX];
                struct stat st;
                if ((size_t)snprintf(gz, sizeof gz, "%s/%s.gz", sdir,
                                     de->d_name) >= sizeof gz ||
                    !stat(gz, &st))
                    continue;
            }
            if ((size_t)snprintf(full, sizeof full, "%s/%s", dpath,
                                 de->d_name) >= sizeof full)
                continue;
            if (flist_add(out, full)) {
                closedir(d);
                return -1;
            }
        }
        closedir(d);
    }
    if (out->n)
        qsort(out->p, out->n, sizeof *out->p, num_cmp);
    return 0;
}

int imp_session_files(const char *sdir, flist fl[IMP_NCH])
{
    memset(fl, 0, IMP_NCH * sizeof *fl);
    for (int c = 0; c < IMP_NCH; c++)
        if (channel_files(sdir, imp_in_channels[c], &fl[c]))
            return -1;
    return 0;
}

/* ---- v1.0-1.1 and v0: flat files <base>.<channel>[.<i>].log[.gz] ---------- */

enum { CH_KERNEL = 3 }; /* v0's channel in place of device */
static const char *const flat_ch[4] = { "device", "scope", "system", "kernel" };

/* Splits a flat file name; 0 when it is not one.  idx -1 = active file. */
static int flat_parse(const char *name, size_t *blen, int *ch, long *idx,
                      int *gz)
{
    size_t n = strlen(name), k;
    *gz = 0;
    *idx = -1;
    if (n > 3 && !strcmp(name + n - 3, ".gz")) {
        *gz = 1;
        n -= 3;
    }
    if (n < 4 || memcmp(name + n - 4, ".log", 4))
        return 0;
    n -= 4;
    for (k = n; k > 0 && isdigit((unsigned char)name[k - 1]); k--)
        ;
    if (k < n && n - k <= 9 && k > 1 && name[k - 1] == '.') {
        *idx = strtol(name + k, NULL, 10);
        n = k - 1;
    } else if (*gz || k < n) {
        return 0; /* only rotated windows are gzipped */
    }
    for (int c = 0; c < 4; c++) {
        size_t cl = strlen(flat_ch[c]);
        if (n > cl + 1 && name[n - cl - 1] == '.' &&
            !memcmp(name + n - cl, flat_ch[c], cl)) {
            *ch = c;
            *blen = n - cl - 1;
            return c != CH_KERNEL || *idx >= 0;
        }
    }
    return 0;
}

/* v0 without doubt: its kernel channel, or index 0 (v1.0-1.1 count from 1
 * and compress every rotated window). */
static int sure_v0(int ch, long idx, int gz)
{
    return ch == CH_KERNEL || (idx == 0 && !gz);
}

/* A file of a base: 1 = v1.0-1.1, 0 = v0 (base_v0: the base has sure v0
 * files, so its plain <ch>.<i>.log files are v0 too). */
static int is_v1(int ch, long idx, int gz, int base_v0)
{
    if (sure_v0(ch, idx, gz))
        return 0;
    if (idx < 0 || gz || ch == 0)
        return 1; /* active file, gzipped window, device channel */
    /* a plain <ch>.<i>.log: v1.0-1.1 between rename and gzip, unless
     * the base is v0's */
    return !base_v0;
}

static int regular(const char *dir, const char *name)
{
    char p[RPT_PATH_MAX];
    struct stat st;
    return (size_t)snprintf(p, sizeof p, "%s/%s", dir, name) < sizeof p &&
           !lstat(p, &st) && S_ISREG(st.st_mode);
}

int imp_flat_bases(const char *dir, flatbase **out, size_t *nout)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    flatbase *b = NULL;
    size_t nb = 0;
    struct {
        size_t v0, v1;
    } *cnt = NULL;
    *out = NULL;
    *nout = 0;
    if (!d)
        return 0;
    /* first the bases and whether each has sure v0 files, then counts */
    for (int pass = 0; pass < 2; pass++) {
        rewinddir(d);
        while ((de = readdir(d))) {
            size_t blen, i;
            int ch, gz;
            long idx;
            if (de->d_name[0] == '.' ||
                !flat_parse(de->d_name, &blen, &ch, &idx, &gz) ||
                !regular(dir, de->d_name))
                continue;
            for (i = 0; i < nb; i++)
                if (strlen(b[i].base) == blen &&
                    !memcmp(b[i].base, de->d_name, blen))
                    break;
            if (pass == 1) {
                if (is_v1(ch, idx, gz, b[i].v0))
                    cnt[i].v1++;
                else
                    cnt[i].v0++;
                continue;
            }
            if (i == nb) {
                flatbase *nbp = realloc(b, (nb + 1) * sizeof *b);
                if (!nbp)
                    goto oom;
                b = nbp;
                if (!(b[nb].base = strndup(de->d_name, blen)))
                    goto oom;
                b[nb].v0 = 0;
                b[nb].nfiles = 0;
                nb++;
            }
            b[i].v0 |= sure_v0(ch, idx, gz);
        }
        if (pass == 0 && nb && !(cnt = calloc(nb, sizeof *cnt)))
            goto oom;
    }
    closedir(d);
    /* one entry per base and generation: v1 first */
    {
        flatbase *r = calloc(nb * 2 + 1, sizeof *r);
        size_t n = 0;
        if (!r)
            goto oom2;
        for (size_t i = 0; i < nb; i++) {
            if (cnt[i].v1) {
                r[n].base = strdup(b[i].base);
                r[n].v0 = 0;
                r[n++].nfiles = cnt[i].v1;
            }
            if (cnt[i].v0) {
                r[n].base = strdup(b[i].base);
                r[n].v0 = 1;
                r[n++].nfiles = cnt[i].v0;
            }
        }
        for (size_t i = 0; i < nb; i++)
            free(b[i].base);
        free(b);
        free(cnt);
        for (size_t i = 0; i < n; i++)
            if (!r[i].base) {
                for (size_t j = 0; j < n; j++)
                    free(r[j].base);
                free(r);
                return -1;
            }
        *out = r;
        *nout = n;
        return 0;
    }
oom:
    closedir(d);
oom2:
    for (size_t i = 0; i < nb; i++)
        free(b[i].base);
    free(b);
    free(cnt);
    return -1;
}

typedef struct fitem {
    char *path;
    long idx;
} fitem;

static int newest_last(const void *a, const void *b)
{
    const fitem *x = a, *y = b;
    /* the highest index is the oldest window; the active file (-1) last */
    long kx = x->idx < 0 ? -1 : x->idx, ky = y->idx < 0 ? -1 : y->idx;
    if (kx != ky)
        return kx > ky ? -1 : 1;
    return strcmp(x->path, y->path);
}

int imp_flat_files(const char *dir, const char *base, flist fl[IMP_NCH])
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t bl = strlen(base);
    int base_v0 = 0, rc = 0;
    fitem *it[3] = { NULL, NULL, NULL };
    size_t nit[3] = { 0, 0, 0 };
    memset(fl, 0, IMP_NCH * sizeof *fl);
    if (!d)
        return 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        rewinddir(d);
        while ((de = readdir(d))) {
            size_t blen;
            int ch, gz;
            long idx;
            char full[RPT_PATH_MAX];
            fitem *ni;
            if (de->d_name[0] == '.' ||
                !flat_parse(de->d_name, &blen, &ch, &idx, &gz) || blen != bl ||
                memcmp(de->d_name, base, bl))
                continue;
            if (pass == 0) {
                base_v0 |= sure_v0(ch, idx, gz);
                continue;
            }
            if (!is_v1(ch, idx, gz, base_v0) || !regular(dir, de->d_name))
                continue;
            if (gz) {
                /* a window both renamed and gzipped: the plain file is
                 * complete for sure, the .gz may not be */
                char plain[RPT_PATH_MAX];
                size_t n = strlen(de->d_name) - 3;
                snprintf(plain, sizeof plain, "%.*s", (int)n, de->d_name);
                if (regular(dir, plain))
                    continue;
            }
            if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, de->d_name) >=
                sizeof full)
                continue;
            ni = realloc(it[ch], (nit[ch] + 1) * sizeof *ni);
            if (!ni || !(ni[nit[ch]].path = strdup(full))) {
                if (ni)
                    it[ch] = ni;
                rc = -1;
                break;
            }
            it[ch] = ni;
            ni[nit[ch]++].idx = idx;
        }
    }
    closedir(d);
    for (int c = 0; c < 3; c++) {
        if (nit[c])
            qsort(it[c], nit[c], sizeof *it[c], newest_last);
        for (size_t i = 0; i < nit[c]; i++) {
            if (!rc && flist_add(&fl[c], it[c][i].path))
                rc = -1;
            free(it[c][i].path);
        }
        free(it[c]);
    }
    return rc;
}
