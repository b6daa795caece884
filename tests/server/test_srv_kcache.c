/*
 * test_srv_kcache.c - the cold tier's local cache (src/server/kcache.c):
 * a put reads back whole, the total stays within the cap with the least
 * recently used files evicted first (a hit counts as a use), a temporary
 * file left by a put that died is removed at open, a link in place of a
 * cached file or of the folder is not followed, and names that could
 * leave the folder are refused.
 */
#include "kcache.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static uint64_t dir_bytes(const char *d, int *nfiles)
{
    DIR *h = opendir(d);
    struct dirent *e;
    uint64_t n = 0;
    char p[512];
    struct stat st;

    *nfiles = 0;
    while (h && (e = readdir(h)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || e->d_name[1] == '.'))
            continue;
        snprintf(p, sizeof(p), "%s/%s", d, e->d_name);
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            n += (uint64_t)st.st_size;
            (*nfiles)++;
        }
    }
    if (h)
        closedir(h);
    return n;
}

static int exists(const char *name)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void test_put_get_evict(void)
{
    kcache *c = NULL;
    gbuf g = GBUF_INIT(1 << 20);
    char why[256], blk[1000], name[32];
    uint64_t bytes, files, ev;
    int n;

    REQUIRE(kcache_open(&c, dir, 3500, why, sizeof(why)) == 0);
    for (int i = 0; i < 3; i++) {
        memset(blk, 'a' + i, sizeof(blk));
        snprintf(name, sizeof(name), "b%d", i);
        CHECK(kcache_put(c, name, blk, sizeof(blk)) == 0);
        /* distinct mtimes: the order of use is what evicts */
        usleep(20000);
    }
    CHECK(kcache_get(c, "b1", &g) == 0 && g.len == sizeof(blk) &&
          g.p[0] == 'b' && g.p[999] == 'b');
    CHECK(kcache_get(c, "b0", &g) == 0); /* b0 used after b1 and b2 */
    usleep(20000);
    CHECK(kcache_get(c, "nope", &g) == GPUFL_ENOTFOUND && g.len == 0);
    /* a fourth block passes the cap (3500): the least recently used go
     * until 90 % of it holds all - b2, the one not read since its put
     * (by age of put, b0 would have gone) */
    memset(blk, 'z', sizeof(blk));
    CHECK(kcache_put(c, "b3", blk, sizeof(blk)) == 0);
    CHECK(!exists("b2"));
    CHECK(exists("b0") && exists("b1") && exists("b3"));
    CHECK(dir_bytes(dir, &n) <= 3500);
    CHECK_EQ_U64(n, 3);
    kcache_usage(c, &bytes, &files, &ev);
    CHECK_EQ_U64(bytes, 3000);
    CHECK_EQ_U64(files, 3);
    CHECK_EQ_U64(ev, 1);
    CHECK(kcache_get(c, "b3", &g) == 0 && g.len == 1000 && g.p[5] == 'z');
    /* bigger than 90 % of the cap: refused, nothing evicted for it */
    {
        char *big = calloc(1, 3200);
        CHECK(big && kcache_put(c, "big", big, 3200) == GPUFL_ETOOBIG);
        free(big);
    }
    CHECK(exists("b0"));
    /* a name that could leave the folder, or an odd one */
    CHECK(kcache_put(c, "../x", blk, 10) == GPUFL_EINVAL);
    CHECK(kcache_put(c, ".hidden", blk, 10) == GPUFL_EINVAL);
    CHECK(kcache_get(c, "../b0", &g) == GPUFL_ENOTFOUND);
    kcache_close(c);
    gbuf_release(&g);
}

static void test_links_and_leftovers(void)
{
    kcache *c = NULL;
    gbuf g = GBUF_INIT(1 << 20);
    char why[256], p[512], q[512];
    int fd, n;

    /* a put that died left a temporary file: gone at open, not counted */
    snprintf(p, sizeof(p), "%s/.tmp-1-0", dir);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    CHECK(write(fd, "half", 4) == 4);
    close(fd);
    /* a link planted where a block would be is not read through */
    snprintf(q, sizeof(q), "%s/outside", dir);
    snprintf(p, sizeof(p), "%s.secret", dir);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    CHECK(write(fd, "secret", 6) == 6);
    close(fd);
    CHECK(symlink(p, q) == 0);
    REQUIRE(kcache_open(&c, dir, 1 << 20, why, sizeof(why)) == 0);
    snprintf(p, sizeof(p), "%s/.tmp-1-0", dir);
    CHECK(access(p, F_OK) != 0);
    CHECK(kcache_get(c, "outside", &g) == GPUFL_ENOTFOUND && g.len == 0);
    /* a put over the link replaces the link, not its target */
    CHECK(kcache_put(c, "outside", "block", 5) == 0);
    CHECK(kcache_get(c, "outside", &g) == 0 && g.len == 5);
    snprintf(p, sizeof(p), "%s.secret", dir);
    CHECK(dir_bytes(dir, &n) > 0);
    {
        char buf[16] = "";
        fd = open(p, O_RDONLY);
        CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 6 &&
              !memcmp(buf, "secret", 6));
        if (fd >= 0)
            close(fd);
    }
    unlink(p);
    kcache_close(c);
    /* the folder itself a link: refused */
    snprintf(p, sizeof(p), "%s.link", dir);
    CHECK(symlink(dir, p) == 0);
    c = NULL;
    CHECK(kcache_open(&c, p, 1 << 20, why, sizeof(why)) == GPUFL_EINVAL && !c);
    unlink(p);
    gbuf_release(&g);
}

int main(void)
{
    const char *tmp = getenv("GPUFL_TEST_TMP");
    snprintf(dir, sizeof(dir), "%s/kcache.XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    RUN(test_put_get_evict);
    RUN(test_links_and_leftovers);
    {
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
    }
    TEST_DONE();
}
