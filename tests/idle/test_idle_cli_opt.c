/*
 * test_idle_cli_opt.c - gpufl idle's option table (src/cli/cli_idle.c):
 * well formed, and its defaults are the detector's own (idle_cfg_init),
 * so the documented defaults are the ones the library uses.
 */
#include "cli_int.h"
#include "idle/idle.h"
#include "test.h"

static void test_table(void)
{
    char why[256] = "";
    CHECK(opt_table_check(&cli_idle_prog, why, sizeof why) == 0);
    if (why[0])
        fprintf(stderr, "%s\n", why);
}

static void test_defaults(void)
{
    idle_opts got;
    idle_cfg want;
    REQUIRE(cli_idle_defaults(&got) == 0);
    idle_cfg_init(&want);
    got.cfg.unattended_mult = want.unattended_mult; /* not an option */
    CHECK_EQ_U64(got.cfg.interval_ms, want.interval_ms);
    CHECK_EQ_U64(got.cfg.window_s, want.window_s);
    CHECK_EQ_U64(got.cfg.fb_empty, want.fb_empty);
    CHECK_EQ_U64(got.cfg.grace_s, want.grace_s);
    CHECK_EQ_U64(got.cfg.max_age_s, want.max_age_s);
    CHECK(got.cfg.held_floor == want.held_floor);
    /* and every other field, padding included (both start zeroed) */
    CHECK(memcmp(&got.cfg, &want, sizeof want) == 0);
    CHECK_EQ_U64(got.samples, 5);
}

int main(void)
{
    RUN(test_table);
    RUN(test_defaults);
    TEST_DONE();
}
