/*
 * test_counter_sessions.c - a gpufl_counter handle kept across
 * gpufl_shutdown/gpufl_init never counts into another counter: in a later
 * session it is ignored (said once) until its name is got again; and
 * gpufl_counter_get on other threads while sessions start and stop keeps
 * one slot per name.  Checked in the scope logs each session wrote.
 */
#include <gpufl/gpufl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/jsonl.h"
#include "test.h"

static char logdir[512];

static int start(void)
{
    gpufl_options o;
    gpufl_options_init(&o);
    o.log_dir = logdir;
    o.engines = "host";
    o.system_interval_ms = 0;
    o.min_free_bytes = 0;
    return gpufl_init(&o);
}

/* What one session's scope log says of a counter and of markers. */
typedef struct seen {
    int lines;    /* counter lines of the name */
    int64_t last; /* their last value */
    int stale;    /* markers about a handle from an earlier session */
} seen;

static void scan(const char *prefix, const char *name, seen *out)
{
    char path[1024], *buf;
    FILE *f;
    size_t len, pos = 0, n;
    const char *line;
    jsonl_tok tok[64];
    jsonl_doc doc;
    uint32_t id = gpufl_intern(name);
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "%s.scope.log", prefix);
    f = fopen(path, "re");
    if (!f) {
        CHECK(!"scope log missing");
        return;
    }
    buf = malloc(1 << 20);
    len = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    jsonl_doc_init(&doc, tok, 64);
    while (buf && jsonl_line_next(buf, len, &pos, &line, &n)) {
        uint64_t nid;
        char text[256];
        size_t tlen;
        if (jsonl_doc_parse_obj(&doc, line, n) != GPUFL_OK)
            continue;
        if (jsonl_tok_streq(&doc, jsonl_doc_find(&doc, "type"), "counter", 7) &&
            jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "name"), &nid) == 0 &&
            nid == id) {
            out->lines++;
            CHECK(jsonl_tok_i64(&doc, jsonl_doc_find(&doc, "value"),
                                &out->last) == GPUFL_OK);
        }
        if (jsonl_tok_streq(&doc, jsonl_doc_find(&doc, "type"), "marker", 6) &&
            jsonl_tok_str(&doc, jsonl_doc_find(&doc, "text"), text, sizeof text,
                          &tlen) == GPUFL_OK &&
            strstr(text, "earlier session"))
            out->stale++;
    }
    free(buf);
}

static void test_handle_across_sessions(void)
{
    gpufl_counter *a, *b, *a3;
    char p1[1024], p2[1024], p3[1024];
    seen s;

    REQUIRE(start() == GPUFL_OK);
    a = gpufl_counter_get("alpha");
    REQUIRE(a != NULL);
    gpufl_counter_add(a, 5);
    snprintf(p1, sizeof p1, "%s", gpufl_log_prefix());
    gpufl_shutdown();
    scan(p1, "alpha", &s);
    CHECK(s.lines >= 1 && s.last == 5);

    /* a new session: `a` is stale, and must not become "beta" */
    REQUIRE(start() == GPUFL_OK);
    b = gpufl_counter_get("beta");
    REQUIRE(b != NULL);
    CHECK(b != a);
    gpufl_counter_add(a, 100); /* ignored, said once */
    gpufl_counter_set(a, 7);   /* ignored */
    gpufl_counter_add(b, 1);
    snprintf(p2, sizeof p2, "%s", gpufl_log_prefix());
    gpufl_shutdown();
    scan(p2, "beta", &s);
    CHECK(s.lines >= 1);
    CHECK_EQ_U64(s.last, 1); /* not 101 or 7 */
    CHECK_EQ_U64(s.stale, 1);
    scan(p2, "alpha", &s);
    CHECK_EQ_U64(s.lines, 0); /* not got in session 2: not written */

    /* got again: the same handle, starting at 0 */
    REQUIRE(start() == GPUFL_OK);
    a3 = gpufl_counter_get("alpha");
    CHECK(a3 == a);
    gpufl_counter_add(a, 3);
    snprintf(p3, sizeof p3, "%s", gpufl_log_prefix());
    gpufl_shutdown();
    scan(p3, "alpha", &s);
    CHECK(s.lines >= 1 && s.last == 3);
    CHECK_EQ_U64(s.stale, 0);
    scan(p3, "beta", &s);
    CHECK_EQ_U64(s.lines, 0);
}

static atomic_int stop_getters;

static void *getter(void *arg)
{
    char name[32];
    unsigned i = 0, base = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&stop_getters)) {
        gpufl_counter *c;
        snprintf(name, sizeof name, "race%u", (base + i++) % 16);
        c = gpufl_counter_get(name);
        gpufl_counter_add(c, 1);
    }
    return NULL;
}

/* gpufl_counter_get on other threads while sessions start and stop: the
 * table keeps one slot per name (the lock is never torn down under them). */
static void test_get_during_restarts(void)
{
    pthread_t th[3];
    uint32_t n;
    int dup = 0;
    atomic_store(&stop_getters, 0);
    for (uintptr_t i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, getter, (void *)(i * 5));
    for (int k = 0; k < 20; k++) {
        CHECK(start() == GPUFL_OK);
        usleep(2000);
        gpufl_shutdown();
    }
    atomic_store(&stop_getters, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    n = atomic_load(&g_client.n_counters);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            dup += g_client.counters[i].name == g_client.counters[j].name;
    CHECK_EQ_U64(dup, 0);
    CHECK(n <= 2 + 16); /* alpha, beta and race0..race15 */
}

int main(void)
{
    const char *tmp = getenv("GPUFL_TEST_TMP");
    snprintf(logdir, sizeof logdir, "%s/counter_sessions.%d",
             tmp ? tmp : "/tmp", (int)getpid());
    RUN(test_handle_across_sessions);
    RUN(test_get_during_restarts);
    TEST_DONE();
}
