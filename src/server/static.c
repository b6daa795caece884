/*
 * static.c - serves the web UI's built files from --ui-dir at /, without
 * auth (they hold no data; the API they call is protected).
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

int srv_static_open(srv *s, char *err, size_t cap)
{
    char ui[PATH_MAX], data[PATH_MAX], db[PATH_MAX + SRV_STR_MAX + 40];
    const char *what = NULL;

    s->ui_fd = -1;
    if (!s->cfg.ui_dir[0])
        return GPUFL_OK;
    if (!realpath(s->cfg.ui_dir, ui)) {
        snprintf(err, cap, "--ui-dir %s: %s", s->cfg.ui_dir, strerror(errno));
        return GPUFL_EINVAL;
    }
    db_file(&s->cfg, db, sizeof(db));
    if (realpath(s->cfg.data_dir, data) && is_below(ui, data))
        what = "data folder";
    else if (db[0] && is_below(ui, db))
        what = "database file";
    if (what) {
        snprintf(err, cap,
                 "--ui-dir %s holds the %s (%s): it would be served to "
                 "anyone without a token; give --ui-dir the web UI's built "
                 "files only (web/dist)",
                 s->cfg.ui_dir, what, what[1] == 'a' ? data : db);
        return GPUFL_EINVAL;
    }
    s->ui_fd = open(ui, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->ui_fd < 0) {
        snprintf(err, cap, "--ui-dir %s: %s", s->cfg.ui_dir, strerror(errno));
        return GPUFL_EINVAL;
    }
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

    if (!s->cfg.ui_dir[0] || s->ui_fd < 0)
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
