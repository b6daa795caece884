/*
 * test_srv_static.c - files of --ui-dir are opened below the folder only:
 * with openat2 and with the component walk used where openat2 is missing
 * (which this kernel never takes by itself), the same answers.
 */
#include "srv_int.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[512];

static void put(const char *rel, const char *text)
{
    char p[1024];
    FILE *f;
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int opens(int dir, const char *rel, int walk)
{
    int fd = srv_static_open_below(dir, rel, walk);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

static void test_below(int walk)
{
    char p[1024];
    int dir;

    snprintf(p, sizeof(p), "%s/ui", root);
    dir = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir >= 0);
    CHECK(opens(dir, "index.html", walk));
    CHECK(opens(dir, "assets/app.js", walk));
    CHECK(!opens(dir, "missing.js", walk));
    /* links out, links in, "..", absolute paths */
    CHECK(!opens(dir, "secret", walk));
    CHECK(!opens(dir, "out/secret.txt", walk));
    CHECK(!opens(dir, "assets/link.js", walk));
    CHECK(!opens(dir, "../outside/secret.txt", walk));
    CHECK(!opens(dir, "assets/../../outside/secret.txt", walk));
    CHECK(!opens(dir, "/etc/passwd", walk));
    /* a FIFO opens at once (O_NONBLOCK) and is no regular file */
    {
        struct stat st;
        int fd = srv_static_open_below(dir, "fifo.js", walk);
        CHECK(fd >= 0);
        if (fd >= 0) {
            CHECK(fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode));
            close(fd);
        }
    }
    close(dir);
}

static void test_openat2(void)
{
    test_below(0);
}

static void test_walk(void)
{
    test_below(1);
}

int main(void)
{
    const char *tmp = getenv("GPUFL_TEST_TMP");
    char p[1024], q[1024];

    snprintf(root, sizeof(root), "%s/srv_static_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(root))
        return 1;
    snprintf(p, sizeof(p), "%s/ui", root);
    mkdir(p, 0700);
    snprintf(p, sizeof(p), "%s/ui/assets", root);
    mkdir(p, 0700);
    snprintf(p, sizeof(p), "%s/outside", root);
    mkdir(p, 0700);
    put("ui/index.html", "<html>");
    put("ui/assets/app.js", "1");
    put("outside/secret.txt", "TOP-SECRET");
    snprintf(p, sizeof(p), "%s/outside/secret.txt", root);
    snprintf(q, sizeof(q), "%s/ui/secret", root);
    CHECK(symlink(p, q) == 0);
    snprintf(p, sizeof(p), "%s/outside", root);
    snprintf(q, sizeof(q), "%s/ui/out", root);
    CHECK(symlink(p, q) == 0);
    snprintf(q, sizeof(q), "%s/ui/assets/link.js", root);
    CHECK(symlink("app.js", q) == 0);
    snprintf(q, sizeof(q), "%s/ui/fifo.js", root);
    CHECK(mkfifo(q, 0600) == 0);
    RUN(test_openat2);
    RUN(test_walk);
    TEST_DONE();
}
