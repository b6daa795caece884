/*
 * static.c - serves the web UI's built files at /, without auth (they
 * hold no data; the API they call is protected): from --ui-dir, or
 * without it from the copy `make install` put next to the binary
 * (BINDIR/GPUFL_UI_REL: PREFIX/share/gpufl/web), or, for a binary run
 * from its build tree (a CMakeCache.txt one folder above it names the
 * source tree), from the source tree's web/dist.  --ui-dir none: none.
 *
 * The folder is opened once at start; every file is opened relative to it
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so neither "..",
 * nor an absolute path, nor a symbolic link anywhere below the folder can
 * lead out of it (a link to /etc/shadow is refused, not followed).  Where
 * openat2 is missing (Linux before 5.6, or a seccomp filter refusing it)
 * the path is walked one component at a time with O_NOFOLLOW, which
 * refuses the same links.  Only regular files under STATIC_FILE_MAX are
 * sent, opened O_NONBLOCK so a FIFO cannot hang a worker.  The server
 * refuses to start when the folder holds its data folder or database
 * file: those would be served to anyone.  An unknown path without an
 * extension falls back to index.html so that client-side routes reload.
 */
#include "srv_int.h"

#include "common/fsutil.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STATIC_FILE_MAX (64u << 20)
/* Most path components walked where openat2 is missing. */
#define STATIC_DEPTH_MAX 32
/* The installed web UI relative to the binary's folder (CMake sets it
 * from the install directories). */
#ifndef GPUFL_UI_REL
#define GPUFL_UI_REL "../share/gpufl/web"
#endif
/* Bytes of a CMakeCache.txt read. */
#define STATIC_CACHE_MAX (4u << 20)

static const char *mime(const char *path)
{
    static const char *const map[][2] = {
        { ".html", "text/html; charset=utf-8" },
        { ".js", "text/javascript; charset=utf-8" },
        { ".css", "text/css; charset=utf-8" },
        { ".json", "application/json" },
        { ".svg", "image/svg+xml" },
        { ".png", "image/png" },
        { ".ico", "image/x-icon" },
        { ".woff2", "font/woff2" },
        { ".map", "application/json" },
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(dot, map[i][0]) == 0)
            return map[i][1];
    return "application/octet-stream";
}

/* rel (no leading '/') below dir, one component at a time, no links. */
static int open_walk(int dir, const char *rel)
{
    char part[NAME_MAX + 1];
    int fd = dup(dir), depth = 0;

    while (fd >= 0 && *rel) {
        size_t n = strcspn(rel, "/");
        int next, last = rel[n] == '\0';
        if (n == 0 || n > NAME_MAX || ++depth > STATIC_DEPTH_MAX ||
            (n == 1 && rel[0] == '.') ||
            (n == 2 && rel[0] == '.' && rel[1] == '.')) {
            close(fd);
            errno = EACCES;
            return -1;
        }
        memcpy(part, rel, n);
        part[n] = '\0';
        next = openat(fd, part,
                      O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
                          (last ? 0 : O_DIRECTORY));
        close(fd);
        fd = next;
        rel += n + !last;
    }
    return fd;
}

int srv_static_open_below(int dir, const char *rel, int walk)
{
    struct open_how how;
    long fd;

    if (walk)
        return open_walk(dir, rel);
    memset(&how, 0, sizeof(how));
    how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
    fd = syscall(SYS_openat2, dir, rel, &how, sizeof(how));
    if (fd < 0 && (errno == ENOSYS || errno == EPERM))
        return open_walk(dir, rel);
    return (int)fd;
}

static int read_file(int dir, const char *rel, char **out, size_t *n)
{
    int fd = srv_static_open_below(dir, rel, 0), rc;

    if (fd < 0)
        return -1;
    rc = fs_read_regular(fd, STATIC_FILE_MAX, out, n);
    close(fd);
    return rc;
}

/* 1 when path (resolved) is dir (resolved) or below it. */
static int is_below(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return 1;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The SQLite file the server uses, resolved, or "" (PostgreSQL). */
static void db_file(const srv_config *c, char *out, size_t cap)
{
    char want[SRV_STR_MAX + 32], dir[PATH_MAX];
    const char *p = c->db, *slash;

    out[0] = '\0';
    if (!strncmp(p, "postgres://", 11) || !strncmp(p, "postgresql://", 13))
        return;
    if (!strncmp(p, "sqlite:", 7))
        p += 7;
    if (!*p)
        snprintf(want, sizeof(want), "%s/gpufl.db", c->data_dir);
    else
        snprintf(want, sizeof(want), "%s", p);
    if (realpath(want, dir)) {
        snprintf(out, cap, "%s", dir);
        return;
    }
    /* not created yet: its folder, resolved, and its name */
    slash = strrchr(want, '/');
    if (slash) {
        char parent[SRV_STR_MAX + 32];
        snprintf(parent, sizeof(parent), "%.*s", (int)(slash - want), want);
        if (realpath(parent[0] ? parent : "/", dir) &&
            (size_t)snprintf(out, cap, "%s%s", dir, slash) >= cap)
            out[0] = '\0';
    } else if (getcwd(dir, sizeof(dir)) &&
               (size_t)snprintf(out, cap, "%s/%s", dir, want) >= cap) {
        out[0] = '\0';
    }
}

/* 1 when dir holds an index.html that is a regular file. */
static int has_index(const char *dir)
{
    char p[PATH_MAX + 16];
    struct stat st;

    return (size_t)snprintf(p, sizeof(p), "%s/index.html", dir) < sizeof(p) &&
           stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The running binary's folder, resolved; 0 when unknown. */
static int exe_dir(char *out, size_t cap)
{
    char p[PATH_MAX], *slash;

    if (!realpath("/proc/self/exe", p) || !(slash = strrchr(p, '/')))
        return 0;
    *slash = '\0';
    return (size_t)snprintf(out, cap, "%s", p[0] ? p : "/") < cap;
}

/* The source tree of the build tree a binary in bin runs from: the
 * gpufl_SOURCE_DIR its CMakeCache.txt (one folder above bin) records. */
static int build_source(const char *bin, char *out, size_t cap)
{
    char p[PATH_MAX + 32], *text = NULL;
    const char *key = "gpufl_SOURCE_DIR:STATIC=", *v;
    size_t n = 0, len;
    int fd, ok = 0;

    if ((size_t)snprintf(p, sizeof(p), "%s/../CMakeCache.txt", bin) >=
        sizeof(p))
        return 0;
    if ((fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return 0;
    if (fs_read_regular(fd, STATIC_CACHE_MAX, &text, &n) == 0) {
        for (v = text; v && v < text + n;
             v = memchr(v, '\n', (size_t)(text + n - v))) {
            if (*v == '\n')
                v++;
            if ((size_t)(text + n - v) > strlen(key) &&
                !strncmp(v, key, strlen(key))) {
                v += strlen(key);
                len = strcspn(v, "\r\n");
                if (len && len + sizeof("/web/dist") <= cap) {
                    memcpy(out, v, len);
                    memcpy(out + len, "/web/dist", sizeof("/web/dist"));
                    ok = 1;
                }
                break;
            }
        }
    }
    free(text);
    close(fd);
    return ok;
}

/* Where the web UI is when --ui-dir is not given: the installed copy,
 * else the build tree's source web/dist, whichever holds index.html.
 * The places looked at go into tried. */
static int ui_find(char *out, size_t cap, char *tried, size_t tcap)
{
    char bin[PATH_MAX], c[2][PATH_MAX + 64];
    int nc = 0;

    tried[0] = '\0';
    if (!exe_dir(bin, sizeof(bin)))
        return 0;
    if ((size_t)snprintf(c[nc], sizeof(c[nc]), "%s/%s", bin, GPUFL_UI_REL) <
        sizeof(c[nc]))
        nc++;
    if (build_source(bin, c[nc], sizeof(c[nc])))
        nc++;
    for (int i = 0; i < nc; i++) {
        size_t tl = strlen(tried);
        snprintf(tried + tl, tcap - tl, "%s%s", i ? ", " : "", c[i]);
        if (has_index(c[i]) && realpath(c[i], out) && strlen(out) < cap)
            return 1;
    }
    return 0;
}

/* What dir holds of the server's own: "data folder", "database file"
 * or NULL; its path into held. */
static const char *holds_data(const srv *s, const char *dir, char *held,
                              size_t cap)
{
    char data[PATH_MAX], db[PATH_MAX + SRV_STR_MAX + 40];

    db_file(&s->cfg, db, sizeof(db));
    if (realpath(s->cfg.data_dir, data) && is_below(dir, data)) {
        snprintf(held, cap, "%s", data);
        return "data folder";
    }
    if (db[0] && is_below(dir, db)) {
        snprintf(held, cap, "%s", db);
        return "database file";
    }
    return NULL;
}

int srv_static_open(srv *s, char *err, size_t cap)
{
    char ui[PATH_MAX], tried[3 * PATH_MAX], held[PATH_MAX + SRV_STR_MAX + 40];
    const char *what = NULL;
    int given = s->cfg.ui_dir[0] != '\0';

    s->ui_fd = -1;
    if (given && !strcmp(s->cfg.ui_dir, "none")) {
        snprintf(s->ui_msg, sizeof(s->ui_msg), "no web UI (--ui-dir none)");
        return GPUFL_OK;
    }
    if (!given) {
        if (!ui_find(ui, sizeof(ui), tried, sizeof(tried))) {
            snprintf(s->ui_msg, sizeof(s->ui_msg),
                     "no web UI (looked in %s; make web, or give --ui-dir)",
                     tried[0] ? tried
                              : "no place: the binary's folder is "
                                "unknown");
            return GPUFL_OK;
        }
    } else if (!realpath(s->cfg.ui_dir, ui)) {
        snprintf(err, cap, "--ui-dir %s: %s", s->cfg.ui_dir, strerror(errno));
        return GPUFL_EINVAL;
    }
    if ((what = holds_data(s, ui, held, sizeof(held))) != NULL) {
        if (!given) {
            snprintf(s->ui_msg, sizeof(s->ui_msg),
                     "no web UI: %s holds the %s (%s), which must not be "
                     "served; give --ui-dir",
                     ui, what, held);
            return GPUFL_OK;
        }
        snprintf(err, cap,
                 "--ui-dir %s holds the %s (%s): it would be served to "
                 "anyone without a token; give --ui-dir the web UI's built "
                 "files only (web/dist)",
                 s->cfg.ui_dir, what, held);
        return GPUFL_EINVAL;
    }
    s->ui_fd = open(ui, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->ui_fd < 0) {
        snprintf(err, cap, "%s %s: %s", given ? "--ui-dir" : "web UI",
                 given ? s->cfg.ui_dir : ui, strerror(errno));
        return GPUFL_EINVAL;
    }
    snprintf(s->ui_msg, sizeof(s->ui_msg), "web UI from %s", ui);
    return GPUFL_OK;
}

void srv_static_close(srv *s)
{
    if (s->ui_fd >= 0)
        close(s->ui_fd);
    s->ui_fd = -1;
}

int srv_static_handle(srv *s, srv_req *r, srv_resp *o)
{
    const char *p = r->path;
    char *body;
    size_t n;

    if (s->ui_fd < 0)
        return 0;
    /* refused before the file system sees it; openat2 would too */
    if (strstr(p, "..") || strchr(p, '\\') || strlen(p) > SRV_STR_MAX)
        return 0;
    if (strcmp(p, "/") == 0)
        p = "/index.html";
    while (*p == '/')
        p++;
    if (read_file(s->ui_fd, p, &body, &n)) {
        const char *last = strrchr(p, '/');
        if (strchr(last ? last : p, '.'))
            return 0;
        p = "index.html";
        if (read_file(s->ui_fd, p, &body, &n))
            return 0;
    }
    o->status = 200;
    o->ctype = mime(p);
    o->body = body;
    o->len = n;
    return 1;
}
