/*
 * test_fsutil.c - fs_read_regular: a regular file whole and NUL-ended,
 * within its cap; a folder, a FIFO and a file over the cap refused with
 * their errno, without blocking.
 */
#include "common/fsutil.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[512];

static int open_rel(const char *rel)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    return open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

static void test_read_regular(void)
{
    char p[1024], *buf = NULL;
    size_t n = 0;
    FILE *f;
    int fd;

    snprintf(p, sizeof(p), "%s/a.txt", root);
    f = fopen(p, "w");
    REQUIRE(f);
    fputs("hello", f);
    fclose(f);
    fd = open_rel("a.txt");
    REQUIRE(fd >= 0);
    CHECK(fs_read_regular(fd, 5, &buf, &n) == 0);
    CHECK(n == 5 && buf && memcmp(buf, "hello", 6) == 0);
    free(buf);
    buf = NULL;
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    errno = 0;
    CHECK(fs_read_regular(fd, 4, &buf, &n) == -1 && errno == EFBIG);
    CHECK(buf == NULL);
    close(fd);
    fd = open_rel(".");
    REQUIRE(fd >= 0);
    errno = 0;
    CHECK(fs_read_regular(fd, 1 << 20, &buf, &n) == -1 && errno == EINVAL);
    close(fd);
    snprintf(p, sizeof(p), "%s/fifo", root);
    REQUIRE(mkfifo(p, 0600) == 0);
    fd = open_rel("fifo");
    REQUIRE(fd >= 0);
    errno = 0;
    CHECK(fs_read_regular(fd, 1 << 20, &buf, &n) == -1 && errno == EINVAL);
    close(fd);
}

int main(void)
{
    const char *tmp = getenv("GPUFL_TEST_TMP");

    snprintf(root, sizeof(root), "%s/fsutil_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(root))
        return 1;
    RUN(test_read_regular);
    TEST_DONE();
}
