/*
 * test_writer.c - stream files: whole-line writes, rotation names (.1, .2,
 * ... in creation order), keep-K pruning, zstd of rotated files (decoded
 * back and compared), refusal to overwrite an existing file.
 */
#include "client/writer.h"
#include "test.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static char dir[512];

static void make_dir(const char *name)
{
    const char *base = getenv("GPUFL_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/writer_%s_%d", base ? base : "/tmp", name,
             (int)getpid());
    mkdir(dir, 0755);
}

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static char *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    char *b;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b)
        b[n] = 0;
    *len = (size_t)n;
    return b;
}

static void put_line(wstream *w, const char *text)
{
    size_t avail, n = strlen(text);
    char *p = writer_space(w, n + 1, &avail);
    memcpy(p, text, n);
    p[n] = '\n';
    writer_commit(w, n + 1);
}

static void test_basic(void)
{
    wstream w;
    char prefix[600], path[700];
    size_t len;
    char *b;
    make_dir("basic");
    snprintf(prefix, sizeof prefix, "%s/app", dir);
    REQUIRE(writer_open(&w, 0, prefix, "device", 1 << 20, 0, 0) == 0);
    put_line(&w, "{\"a\":1}");
    put_line(&w, "{\"a\":2}");
    CHECK_EQ_U64(w.seq, 2);
    CHECK_EQ_U64(file_size(w.path), 0); /* buffered until flush */
    CHECK(writer_flush(&w) == 0);
    snprintf(path, sizeof path, "%s/app.device.log", dir);
    b = slurp(path, &len);
    CHECK_STR(b, "{\"a\":1}\n{\"a\":2}\n");
    free(b);
    writer_close(&w);
    /* a second writer on the same prefix must not clobber the file */
    CHECK(writer_open(&w, 0, prefix, "device", 1 << 20, 0, 0) != 0);
    writer_close(&w);
}

static void test_rotation_and_keep(void)
{
    wstream w;
    char prefix[600], path[700], line[128];
    int rotations = 0;
    make_dir("rotate");
    snprintf(prefix, sizeof prefix, "%s/app", dir);
    REQUIRE(writer_open(&w, 1, prefix, "scope", 4096, 3, 0) == 0);
    for (int i = 0; i < 1000; i++) {
        int n =
            snprintf(line, sizeof line, "{\"i\":%d,\"pad\":\"%040d\"}", i, i);
        if (writer_should_rotate(&w, (size_t)n + 1)) {
            uint32_t gen = w.file_gen;
            REQUIRE(writer_rotate(&w) == 0);
            CHECK(w.file_gen != gen);
            CHECK_EQ_U64(w.file_bytes, 0);
            rotations++;
        }
        put_line(&w, line);
    }
    writer_close(&w);
    CHECK(rotations > 10);
    CHECK_EQ_U64(w.rotations, rotations);
    /* only the last 3 rotated files are kept, and every kept file is at
     * most the rotation size */
    for (int n = 1; n <= rotations; n++) {
        snprintf(path, sizeof path, "%s/app.scope.log.%d", dir, n);
        if (n <= rotations - 3)
            CHECK(file_size(path) == -1);
        else
            CHECK(file_size(path) > 0 && file_size(path) <= 4096);
    }
    snprintf(path, sizeof path, "%s/app.scope.log", dir);
    CHECK(file_size(path) > 0);
}

static void test_compress(void)
{
    wstream w;
    char prefix[600], path[700], line[128];
    size_t zlen, plen;
    char *z, *plain;
    make_dir("zstd");
    snprintf(prefix, sizeof prefix, "%s/app", dir);
    REQUIRE(writer_compressor_start() == 0);
    REQUIRE(writer_open(&w, 2, prefix, "system", 8192, 0, 1) == 0);
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(line, sizeof line, "{\"i\":%d}", i);
        if (writer_should_rotate(&w, (size_t)n + 1))
            REQUIRE(writer_rotate(&w) == 0);
        put_line(&w, line);
    }
    writer_close(&w);
    writer_compressor_stop(); /* finishes the queue */
    CHECK(w.rotations >= 1);
    snprintf(path, sizeof path, "%s/app.system.log.1", dir);
    CHECK(file_size(path) == -1); /* replaced by .zst */
    snprintf(path, sizeof path, "%s/app.system.log.1.zst", dir);
    z = slurp(path, &zlen);
    REQUIRE(z);
    {
        unsigned long long cap = ZSTD_getFrameContentSize(z, zlen);
        char *out;
        size_t got;
        REQUIRE(cap != ZSTD_CONTENTSIZE_ERROR);
        if (cap == ZSTD_CONTENTSIZE_UNKNOWN)
            cap = 1 << 20;
        out = malloc(cap + 1);
        got = ZSTD_decompress(out, cap, z, zlen);
        REQUIRE(!ZSTD_isError(got));
        out[got] = 0;
        CHECK(strncmp(out, "{\"i\":0}\n{\"i\":1}\n", 16) == 0);
        CHECK(out[got - 1] == '\n');
        plain = out;
        plen = got;
        CHECK(plen > 1000);
        free(plain);
    }
    free(z);
}

static void test_compress_file_missing(void)
{
    CHECK(writer_compress_file("/nonexistent/dir/file") != 0);
}

int main(void)
{
    RUN(test_basic);
    RUN(test_rotation_and_keep);
    RUN(test_compress);
    RUN(test_compress_file_missing);
    TEST_DONE();
}
