/*
 * test_sim_names.c - the simulated GPU writes kernel names a C++ tool can
 * read: every name of its catalog (the kernels it launches, and the
 * functions of its SASS and PC-sampling lines) goes through binutils'
 * c++filt; a mangled one must demangle, and the "demangled" member of the
 * dict line libgpufl writes for it must be c++filt's reading.  Names that
 * are not mangled (cuBLAS, NCCL) must pass through c++filt unchanged and
 * get no "demangled" member.
 */
#include "client/format.h"
#include "client/sim_int.h"
#include "common/jsonl.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_ 16384

static char want[K_COUNT][LINE_MAX_];

/* c++filt's reading of every catalog name, one line each, into want. */
static int run_cxxfilt(void)
{
    char path[] = "/tmp/gpufl-simnames-XXXXXX", cmd[128];
    int fd = mkstemp(path), rc;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL, *p;

    if (!f)
        return -1;
    for (int k = 0; k < K_COUNT; k++)
        fprintf(f, "%s\n", sim_catalog[k].name);
    fclose(f);
    snprintf(cmd, sizeof cmd, "c++filt < %s", path);
    p = popen(cmd, "r");
    if (!p) {
        unlink(path);
        return -1;
    }
    for (int k = 0; k < K_COUNT; k++) {
        if (!fgets(want[k], LINE_MAX_, p))
            want[k][0] = '\0';
        want[k][strcspn(want[k], "\n")] = '\0';
    }
    rc = pclose(p);
    unlink(path);
    if (rc != 0)
        fprintf(stderr,
                "c++filt failed (%d): install binutils "
                "(scripts/deps.sh test)\n",
                rc);
    return rc == 0 ? 0 : -1;
}

static void test_catalog(void)
{
    static char buf[3 * LINE_MAX_];
    int mangled = 0;

    REQUIRE(run_cxxfilt() == 0);
    for (int k = 0; k < K_COUNT; k++) {
        const char *name = sim_catalog[k].name;
        uint32_t id = intern_name(name, strlen(name));
        jsonl_tok tok[64];
        jsonl_doc d;
        jw j;
        uint32_t t;
        char dm[LINE_MAX_];
        size_t n = 0;

        REQUIRE(id != 0);
        jw_init(&j, buf, sizeof buf);
        jw_obj_begin(&j);
        fmt_dict(&j, intern_get(id));
        REQUIRE(!j.err);
        jsonl_doc_init(&d, tok, 64);
        REQUIRE(jsonl_doc_parse_obj(&d, buf, j.len) == GPUFL_OK);
        t = jsonl_doc_find(&d, "demangled");
        if (strncmp(name, "_Z", 2) == 0) {
            mangled++;
            /* c++filt prints a name it cannot read as it is */
            if (strcmp(want[k], name) == 0)
                fprintf(stderr, "c++filt cannot read %s\n", name);
            CHECK(strcmp(want[k], name) != 0);
            CHECK(t != JSONL_NOTFOUND);
            if (t == JSONL_NOTFOUND)
                continue;
            CHECK(jsonl_tok_str(&d, t, dm, sizeof dm, &n) == GPUFL_OK);
            CHECK_STR(dm, want[k]);
        } else {
            CHECK_STR(want[k], name);
            CHECK(t == JSONL_NOTFOUND);
        }
    }
    /* the catalog has PyTorch and flash-attention templates */
    CHECK(mangled >= 10);
}

int main(void)
{
    RUN(test_catalog);
    TEST_DONE();
}
