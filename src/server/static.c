/*
 * static.c - serves the web UI's built files from --ui-dir at /, without
 * auth (they hold no data; the API they call is protected).
 *
 * Paths are confined to the folder: any ".." segment or backslash is
 * refused before the file system sees it, and only regular files under
 * STATIC_FILE_MAX are sent.  An unknown path without an extension falls
 * back to index.html so that client-side routes reload.
 */
#include "srv_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATIC_FILE_MAX (64u << 20)

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

static int read_file(const char *path, char **out, size_t *n)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf;
    size_t got = 0;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > STATIC_FILE_MAX) {
        close(fd);
        return -1;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return -1;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *n = got;
    return 0;
}

int srv_static_handle(srv *s, srv_req *r, srv_resp *o)
{
    char path[SRV_STR_MAX * 2];
    const char *p = r->path;
    char *body;
    size_t n;

    if (!s->cfg.ui_dir[0])
        return 0;
    if (strstr(p, "..") || strchr(p, '\\') || strlen(p) > SRV_STR_MAX)
        return 0;
    if (strcmp(p, "/") == 0)
        p = "/index.html";
    snprintf(path, sizeof(path), "%s%s", s->cfg.ui_dir, p);
    if (read_file(path, &body, &n)) {
        const char *last = strrchr(p, '/');
        if (last && strchr(last, '.'))
            return 0;
        snprintf(path, sizeof(path), "%s/index.html", s->cfg.ui_dir);
        p = "/index.html";
        if (read_file(path, &body, &n))
            return 0;
    }
    o->status = 200;
    o->ctype = mime(p);
    o->body = body;
    o->len = n;
    return 1;
}
