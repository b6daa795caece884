/*
 * test_prom.c - the Prometheus text writer: families, samples with and
 * without labels, label values escaped as the exposition format says,
 * numbers, and the gbuf's cap.
 */
#include "common/prom.h"
#include "test.h"

#include <gpufl/gpufl.h>

static void test_lines(void)
{
    gbuf b = GBUF_INIT(4096);
    prom_label l[2] = { { "route", "ingest" }, { "le", "+Inf" } };

    prom_family(&b, "x_total", "counter", "Things counted.");
    prom_u64(&b, "x_total", NULL, 0, 18446744073709551615ull);
    prom_u64(&b, "x_total", l, 2, 7);
    prom_f64(&b, "x_sum", l, 1, 0.0012345, 6);
    prom_f64(&b, "x_ratio", NULL, 0, 0.5, 4);
    CHECK(b.err == 0);
    CHECK_STR(b.p, "# HELP x_total Things counted.\n"
                   "# TYPE x_total counter\n"
                   "x_total 18446744073709551615\n"
                   "x_total{route=\"ingest\",le=\"+Inf\"} 7\n"
                   "x_sum{route=\"ingest\"} 0.001234\n"
                   "x_ratio 0.5000\n");
    gbuf_release(&b);
}

static void test_escape(void)
{
    gbuf b = GBUF_INIT(4096);
    prom_label l[2] = { { "pod", "a \"b\" \\c\nd" }, { "empty", NULL } };

    prom_u64(&b, "y", l, 2, 1);
    CHECK_STR(b.p, "y{pod=\"a \\\"b\\\" \\\\c\\nd\",empty=\"\"} 1\n");
    gbuf_reset(&b);
    prom_escape(&b, "\\\\\"\n", 4);
    CHECK_STR(b.p, "\\\\\\\\\\\"\\n");
    gbuf_reset(&b);
    prom_escape(&b, "plain", 5);
    CHECK_STR(b.p, "plain");
    gbuf_release(&b);
}

static void test_cap(void)
{
    gbuf b = GBUF_INIT(40);
    prom_family(&b, "z", "gauge", "A family whose help is too long to fit.");
    prom_u64(&b, "z", NULL, 0, 1);
    CHECK(b.err == GPUFL_ETOOBIG);
    CHECK(b.len <= 40);
    gbuf_release(&b);
}

int main(void)
{
    RUN(test_lines);
    RUN(test_escape);
    RUN(test_cap);
    TEST_DONE();
}
