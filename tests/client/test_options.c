/*
 * test_options.c - gpufl_options defaults, GPUFL_* environment parsing
 * (sizes with suffixes, booleans, levels, bounds), precedence, and what
 * gpufl_init refuses.
 */
#include <gpufl/gpufl.h>
#include <stdlib.h>

#include "client/client_int.h"
#include "common/opt.h"
#include "test.h"

static void clear_env(void)
{
    static const char *const vars[] = { "GPUFL_APP",
                                        "GPUFL_LOG_DIR",
                                        "GPUFL_ENGINES",
                                        "GPUFL_ROTATE_BYTES",
                                        "GPUFL_ROTATE_KEEP",
                                        "GPUFL_ROTATE_ZSTD",
                                        "GPUFL_MIN_FREE_BYTES",
                                        "GPUFL_RING_EVENTS",
                                        "GPUFL_SIM_SPEED",
                                        "GPUFL_LOG_LEVEL",
                                        "GPUFL_DISABLED",
                                        "GPUFL_SYSTEM_INTERVAL_MS",
                                        "GPUFL_SIM_DEVICES" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

static void test_defaults(void)
{
    gpufl_options o;
    clear_env();
    CHECK(gpufl_options_init(&o) == GPUFL_OK);
    CHECK_EQ_U64(o.sz, sizeof o);
    CHECK_EQ_U64(o.system_interval_ms, 1000); /* on by default */
    CHECK_EQ_U64(o.rotate_bytes, 64ull << 20);
    CHECK_EQ_U64(o.rotate_keep, 20);
    CHECK_EQ_U64(o.ring_events, 16384);
    CHECK_EQ_U64(o.flush_ms, 100);
    CHECK_STR(o.engines, "auto");
    CHECK_STR(o.log_dir, ".");
    CHECK(o.disabled == 0);
    CHECK(gpufl_options_init(NULL) == GPUFL_EINVAL);
}

static void test_env(void)
{
    gpufl_options o;
    clear_env();
    setenv("GPUFL_ROTATE_BYTES", "16MiB", 1);
    setenv("GPUFL_MIN_FREE_BYTES", "2G", 1);
    setenv("GPUFL_ROTATE_ZSTD", "yes", 1);
    setenv("GPUFL_LOG_LEVEL", "debug", 1);
    setenv("GPUFL_SIM_SPEED", "2.5", 1);
    setenv("GPUFL_APP", "trainer", 1);
    CHECK(gpufl_options_init(&o) == GPUFL_OK);
    CHECK_EQ_U64(o.rotate_bytes, 16ull << 20);
    CHECK_EQ_U64(o.min_free_bytes, 2ull << 30);
    CHECK(o.compress_rotated == 1);
    CHECK(o.log_level == GPUFL_LOG_DEBUG);
    CHECK(o.sim_speed == 2.5);
    CHECK_STR(o.app, "trainer");
    clear_env();
}

static void test_bad_env(void)
{
    gpufl_options o;
    clear_env();
    setenv("GPUFL_RING_EVENTS", "12x", 1);
    CHECK(gpufl_options_init(&o) == GPUFL_EINVAL);
    CHECK_EQ_U64(o.ring_events, 16384); /* default kept */
    CHECK(strstr(gpufl_last_error(), "GPUFL_RING_EVENTS") != NULL);
    setenv("GPUFL_RING_EVENTS", "16", 1); /* below the bound of 64 */
    CHECK(gpufl_options_init(&o) == GPUFL_EINVAL);
    setenv("GPUFL_RING_EVENTS", "-5", 1);
    CHECK(gpufl_options_init(&o) == GPUFL_EINVAL);
    unsetenv("GPUFL_RING_EVENTS");
    setenv("GPUFL_ROTATE_ZSTD", "maybe", 1);
    CHECK(gpufl_options_init(&o) == GPUFL_EINVAL);
    setenv("GPUFL_ROTATE_BYTES", "99999999999999999999", 1);
    CHECK(gpufl_options_init(&o) == GPUFL_EINVAL);
    setenv("GPUFL_ROTATE_BYTES", "20000000T", 1); /* overflows u64 */
    CHECK(gpufl_options_init(&o) == GPUFL_EINVAL);
    clear_env();
}

static void test_resolve(void)
{
    gpufl_options o;
    client_cfg cfg;
    char err[256];
    clear_env();
    gpufl_options_init(&o);
    o.app = "my app/../x";
    o.ring_events = 10; /* below the bound */
    CHECK(client_cfg_resolve(&o, &cfg, err, sizeof err) == GPUFL_EINVAL);
    CHECK(strstr(err, "between 64 and") != NULL);
    o.ring_events = 1000; /* rounded up to a power of two */
    CHECK(client_cfg_resolve(&o, &cfg, err, sizeof err) == GPUFL_OK);
    CHECK_EQ_U64(cfg.ring_events, 1024);
    CHECK_STR(cfg.app, "my_app_.._x"); /* safe in a file name */
    o.sz = 8;
    CHECK(client_cfg_resolve(&o, &cfg, err, sizeof err) == GPUFL_EINVAL);
    CHECK(strstr(err, "gpufl_options_init") != NULL);
    CHECK(client_cfg_resolve(NULL, &cfg, err, sizeof err) == GPUFL_OK);
    CHECK_STR(cfg.engines, "auto");
}

static void test_init_refusals(void)
{
    gpufl_options o;
    clear_env();
    gpufl_options_init(&o);
    o.engines = "sim,cuda";
    CHECK(gpufl_init(&o) == GPUFL_EINVAL);
    CHECK(strstr(gpufl_last_error(), "unknown engine \"cuda\"") != NULL);
    CHECK(!gpufl_active());
    o.engines = "host";
    o.disabled = 1;
    CHECK(gpufl_init(&o) == GPUFL_EDISABLED);
    setenv("GPUFL_DISABLED", "true", 1);
    o.disabled = 0;
    CHECK(gpufl_init(&o) == GPUFL_EDISABLED); /* environment always wins */
    unsetenv("GPUFL_DISABLED");
    o.log_dir = "/proc/gpufl-cannot-create";
    CHECK(gpufl_init(&o) != GPUFL_OK);
    CHECK(strstr(gpufl_last_error(), "log directory") != NULL);
    CHECK(!gpufl_active());
    /* calls without a session are harmless */
    CHECK(gpufl_scope_begin("x") == 0);
    gpufl_scope_end(0);
    gpufl_marker("x");
    CHECK(gpufl_counter_get("x") == NULL);
    gpufl_shutdown();
    CHECK(gpufl_flush(10) == GPUFL_ENOTINIT);
    CHECK_STR(gpufl_session_id(), "");
}

static void test_strerror(void)
{
    CHECK_STR(gpufl_strerror(GPUFL_OK), "success");
    CHECK_STR(gpufl_strerror(GPUFL_EINTERNAL),
              "internal error (a bug: please report it)");
    CHECK_STR(gpufl_strerror(-1), "unknown error");
    CHECK_STR(gpufl_strerror(1000), "unknown error");
    CHECK_STR(gpufl_version(), GPUFL_VERSION_STRING);
}

/* The environment table (the option engine's rows): its defaults are
 * gpufl_options_init()'s, and its values take the syntax every gpufl
 * program shares. */
static void test_env_table(void)
{
    static opt_ctx ctx;
    gpufl_options o, d;
    char why[256], a[64], b[64];
    const opt_prog *p = &client_env_prog;

    CHECK(opt_table_check(p, why, sizeof why) == 0);
    clear_env();
    unsetenv("GPUFL_FLUSH_MS");
    unsetenv("GPUFL_CUPTI_FLUSH_MS");
    REQUIRE(gpufl_options_init(&o) == GPUFL_OK);
    REQUIRE(opt_begin(&ctx, p, &d, NULL) == 0);
    for (size_t i = 0; i < p->n; i++) {
        const opt_def *r = &p->opts[i];
        const char *x = opt_value_str(r, &o, a, sizeof a);
        const char *y = opt_value_str(r, &d, b, sizeof b);
        if (!r->def)
            continue;
        CHECK(x && y && !strcmp(x, y));
        if (!x || !y || strcmp(x, y))
            fprintf(stderr, "%s: init %s, table %s\n", r->env, x ? x : "-",
                    y ? y : "-");
    }
    setenv("GPUFL_FLUSH_MS", "2s", 1);
    setenv("GPUFL_RING_EVENTS", "16K", 1);
    setenv("GPUFL_ROTATE_ZSTD", "ON", 1);
    setenv("GPUFL_LOG_LEVEL", "WARN", 1);
    setenv("GPUFL_SYSTEM_INTERVAL_MS", "250", 1); /* bare: milliseconds */
    CHECK(gpufl_options_init(&o) == GPUFL_OK);
    CHECK_EQ_U64(o.flush_ms, 2000);
    CHECK_EQ_U64(o.ring_events, 16384);
    CHECK_EQ_U64(o.system_interval_ms, 250);
    CHECK(o.compress_rotated == 1 && o.log_level == GPUFL_LOG_WARN);
    setenv("GPUFL_FLUSH_MS", "1.5ms", 1); /* not whole milliseconds */
    CHECK(gpufl_options_init(&o) == GPUFL_EINVAL);
    CHECK_EQ_U64(o.flush_ms, 100);
    CHECK(strstr(gpufl_last_error(), "GPUFL_FLUSH_MS") != NULL);
    unsetenv("GPUFL_FLUSH_MS");
    clear_env();
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_env);
    RUN(test_bad_env);
    RUN(test_resolve);
    RUN(test_init_refusals);
    RUN(test_strerror);
    RUN(test_env_table);
    TEST_DONE();
}
