/*
 * test_gaps.c - agent_gap_hold (src/agent/gaps.c): a file whose first line
 * says a file before it in its stream is missing waits while that file is
 * in the folder.  With the file followed by this agent it waits however
 * many scans go by (the sink down, decompressor slots all taken: the file
 * is read in its turn); a file in the folder that the agent does not
 * follow is waited for a bounded number of scans; a file not in the
 * folder is not waited for at all.
 */
#include "agent/agent_int.h"
#include "agent/cursor.h"

#include <gpufl/gpufl.h>

#include "test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[4096];

#define KEY "app.20261201-000000.0123abcd.scope"

static void touch(const char *name)
{
    char p[4200];
    int fd;

    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    close(fd);
}

static void rm(const char *name)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    unlink(p);
}

/* Scans go by; how many agent_gap_hold held f for (at most limit). */
static int held_for(agent_ctx *c, agent_file *f, int limit)
{
    int n = 0;
    while (n < limit && agent_gap_hold(c, f)) {
        c->nscans++;
        n++;
    }
    return n;
}

static void test_hold(void)
{
    agent_cfg cfg;
    agent_ctx c;
    agent_key k;
    agent_file g, f, *files[2] = { &g, &f };

    memset(&cfg, 0, sizeof cfg);
    memset(&c, 0, sizeof c);
    memset(&k, 0, sizeof k);
    memset(&g, 0, sizeof g);
    memset(&f, 0, sizeof f);
    cfg.folder[0] = tmpdir;
    c.cfg = &cfg;
    c.files = files;
    c.nfiles = 2;
    snprintf(k.name, sizeof k.name, "%s", KEY);
    k.flags = CURSOR_K_FILE;
    k.next_file = 2; /* files 0, 1 acknowledged */
    /* f: the live file, file 4 of the stream; files 2 and 3 not read */
    f.k = &k;
    f.n = AGENT_LIVE;
    f.fidx = 4;
    f.fidx_known = 1;
    /* g: file 2 (<key>.log.3.zst), followed, not read yet */
    g.k = &k;
    g.n = 3;

    touch(KEY ".log.3.zst");
    touch(KEY ".log.4.zst");
    /* followed: held however many scans go by */
    CHECK_EQ_U64(held_for(&c, &f, 1000), 1000);
    /* not followed (only in the folder): held, for a bounded number */
    c.nfiles = 1;
    files[0] = &f;
    f.hold_scan = 0;
    {
        int n = held_for(&c, &f, 1000);
        CHECK(n >= AGENT_HOLE_SCANS && n <= AGENT_HOLE_SCANS + 1);
    }
    /* gone from the folder: not held */
    rm(KEY ".log.3.zst");
    rm(KEY ".log.4.zst");
    f.hold_scan = 0;
    CHECK_EQ_U64(held_for(&c, &f, 1000), 0);
    /* no hole: not held (file 3 is the next of the stream) */
    touch(KEY ".log.4.zst");
    k.next_file = 4;
    f.hold_scan = 0;
    CHECK_EQ_U64(held_for(&c, &f, 1000), 0);
    rm(KEY ".log.4.zst");
}

int main(void)
{
    const char *t = getenv("GPUFL_TEST_TMP");
    snprintf(tmpdir, sizeof tmpdir, "%s/agent_gaps.%d", t ? t : "/tmp",
             (int)getpid());
    if (mkdir(tmpdir, 0700)) {
        perror(tmpdir);
        return 1;
    }
    RUN(test_hold);
    rmdir(tmpdir);
    TEST_DONE();
}
