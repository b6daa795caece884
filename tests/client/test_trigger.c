/*
 * test_trigger.c - pending triggers (src/client/trigger.c): SIGUSR2 posts
 * counted once each, however the handler and the collector's take
 * interleave.
 */
#include "client/trigger.h"
#include "test.h"

#include <signal.h>
#include <string.h>

/* Two SIGUSR2 back to back, the collector taking between them: its
 * fetch_and of the bit, then the second handler's count and bit, then
 * its load of the count (preempted between the two).  The take counts
 * both; the bit left set then has no signal behind it and must not post
 * one: a spurious, rate-limited repeat would make 3 signals say 2
 * repeats (client_recorder's test_rate_limit_and_trigger_while_live). */
static void test_signal_bit_without_a_new_signal(void)
{
    trg_cfg cfg;
    trg_event ev;
    uint64_t f[TRG_N], l[TRG_N];
    memset(&cfg, 0, sizeof cfg);
    cfg.armed = 1u << TRG_SIGNAL;
    trigger_reset();
    trigger_arm(&cfg);
    raise(SIGUSR2);
    raise(SIGUSR2);
    REQUIRE(trigger_take(&ev) == 1);
    CHECK(ev.kind == TRG_SIGNAL);
    CHECK(ev.repeats == 1);
    CHECK(!trigger_take(&ev));
    /* the second handler's fetch_or, after the take had counted it */
    atomic_fetch_or(&trigger_waiting, 1u << 31);
    CHECK(!trigger_take(&ev));
    trigger_counts(f, l);
    CHECK(f[TRG_SIGNAL] == 1);
    CHECK(l[TRG_SIGNAL] == 0);
    /* a real signal after it is still taken (limited: within 1 s) */
    raise(SIGUSR2);
    CHECK(!trigger_take(&ev));
    trigger_counts(f, l);
    CHECK(l[TRG_SIGNAL] == 1);
    trigger_disarm();
}

int main(void)
{
    RUN(test_signal_bit_without_a_new_signal);
    TEST_DONE();
}
