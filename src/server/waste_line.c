/*
 * waste_line.c - the fields of a `waste` line (docs/events.md "waste",
 * written by `gpufl idle watch` every --waste-interval): read and checked
 * once here, for ingest (which rejects a bad line with the reason) and for
 * the store (which reads the stored line back into its columns), so the
 * two cannot disagree on what a line means.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"
#include "ingest.h"
#include "store.h"

const char *const srv_waste_reasons[SRV_WASTE_N] = { "idle", "held", "phantom",
                                                     "stuck",
                                                     "allocated_unused" };

/* The owner and GPU strings: short words and ids, cut nowhere. */
static int str_field(jsonl_doc *d, const char *key, char *out, size_t cap,
                     char *reason)
{
    uint32_t t = jsonl_doc_find(d, key);
    size_t n = 0;

    out[0] = '\0';
    if (t == JSONL_NOTFOUND)
        return GPUFL_OK;
    if (jsonl_tok_type(d, t) != JSONL_STRING ||
        jsonl_tok_str(d, t, out, cap, &n) || strlen(out) != n) {
        out[0] = '\0';
        snprintf(reason, INGEST_REASON_MAX,
                 "waste: \"%s\" must be a string of at most %zu bytes", key,
                 cap - 1);
        return GPUFL_EPARSE;
    }
    return GPUFL_OK;
}

/* A GPU-seconds figure: finite, not negative, and not more than the
 * interval it covers (an owner is charged at most the whole GPU). */
static int secs(jsonl_doc *d, uint32_t t, const char *what, double limit,
                double *out, char *reason)
{
    if (jsonl_tok_f64(d, t, out) || !isfinite(*out) || *out < 0) {
        snprintf(reason, INGEST_REASON_MAX,
                 "waste: %s must be a number of seconds >= 0", what);
        return GPUFL_EPARSE;
    }
    if (*out > limit) {
        snprintf(reason, INGEST_REASON_MAX,
                 "waste: %s exceeds the interval from..to", what);
        return GPUFL_EPARSE;
    }
    return GPUFL_OK;
}

int srv_waste_parse(jsonl_doc *d, srv_waste *w, char *reason)
{
    static const struct {
        const char *key;
        size_t off, cap;
    } strs[] = {
#define W_STR(k, m) { k, offsetof(srv_waste, m), sizeof(((srv_waste *)0)->m) }
        W_STR("host", host),
        W_STR("uuid", uuid),
        W_STR("model", model),
        W_STR("user", user),
        W_STR("namespace", ns),
        W_STR("pod", pod),
        W_STR("container", container),
        W_STR("job", job),
        W_STR("app", app),
#undef W_STR
    };
    uint32_t t;
    double limit;
    int b = 0, rc;

    memset(w, 0, sizeof(*w));
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if ((rc = str_field(d, strs[i].key, (char *)w + strs[i].off,
                            strs[i].cap, reason)) != 0)
            return rc;
    if (jsonl_tok_u64(d, jsonl_doc_find(d, "dev"), &w->dev) ||
        w->dev > 1000000) {
        snprintf(reason, INGEST_REASON_MAX,
                 "waste: \"dev\" (a GPU index) is required");
        return GPUFL_EPARSE;
    }
    if (jsonl_tok_u64(d, jsonl_doc_find(d, "from"), &w->from) ||
        jsonl_tok_u64(d, jsonl_doc_find(d, "to"), &w->to) || w->from == 0 ||
        w->to <= w->from || w->to > (uint64_t)INT64_MAX ||
        w->to - w->from > SRV_WASTE_SPAN_MAX) {
        snprintf(reason, INGEST_REASON_MAX,
                 "waste: \"from\" < \"to\" (ns) are required, at most a day "
                 "apart");
        return GPUFL_EPARSE;
    }
    /* a little slack for the rounding of the figures written */
    limit = (double)(w->to - w->from) / 1e9 * 1.001 + 0.01;
    t = jsonl_doc_find(d, "busy_s");
    if (t != JSONL_NOTFOUND &&
        (rc = secs(d, t, "busy_s", limit, &w->busy, reason)) != 0)
        return rc;
    t = jsonl_doc_find(d, "wasted_s");
    if (t != JSONL_NOTFOUND) {
        if (jsonl_tok_type(d, t) != JSONL_OBJECT) {
            snprintf(reason, INGEST_REASON_MAX,
                     "waste: \"wasted_s\" must be an object of reasons");
            return GPUFL_EPARSE;
        }
        for (uint32_t i = 0, k = t + 1; i < d->tok[t].n; i++) {
            int r = -1;
            for (int j = 0; j < SRV_WASTE_N && r < 0; j++)
                if (jsonl_tok_streq(d, k, srv_waste_reasons[j],
                                    strlen(srv_waste_reasons[j])))
                    r = j;
            if (r < 0) {
                snprintf(reason, INGEST_REASON_MAX,
                         "waste: unknown reason in \"wasted_s\" (idle, held, "
                         "phantom, stuck, allocated_unused)");
                return GPUFL_EPARSE;
            }
            if ((rc = secs(d, k + 1, srv_waste_reasons[r], limit, &w->wasted[r],
                           reason)) != 0)
                return rc;
            k = d->tok[k + 1].next;
        }
    }
    t = jsonl_doc_find(d, "simulated");
    if (t != JSONL_NOTFOUND && jsonl_tok_bool(d, t, &b)) {
        snprintf(reason, INGEST_REASON_MAX,
                 "waste: \"simulated\" must be true or false");
        return GPUFL_EPARSE;
    }
    w->simulated = b;
    return GPUFL_OK;
}
