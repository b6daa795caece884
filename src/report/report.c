/*
 * report.c - `gpufl report`: every session of a folder (or one), read
 * once each, aggregated and printed as text or as one JSON document
 * {"sessions":[...]}.
 */
#include <stdlib.h>
#include <string.h>

#include "gpufl/gpufl.h"
#include "report.h"
#include "report_int.h"

int rpt_report_run(const char *dir, const char *session, int json, FILE *out,
                   char *err, size_t errlen)
{
    rpt_folder fo;
    char *pick = NULL;
    size_t npick, done = 0;
    int rc = rpt_folder_scan(dir, &fo, err, errlen);
    if (rc)
        return rc;
    rpt_folder_warn(&fo, stderr);
    pick = calloc(fo.n ? fo.n : 1, 1);
    if (!pick) {
        rpt_folder_release(&fo);
        snprintf(err, errlen, "out of memory");
        return GPUFL_ENOMEM;
    }
    npick = rpt_folder_pick(&fo, session, pick);
    if (!npick) {
        snprintf(err, errlen,
                 session ? "no session %s in %s" : "no gpufl logs in %s%s",
                 session ? session : dir, session ? dir : "");
        rc = GPUFL_ENOTFOUND;
        goto out;
    }
    if (json)
        fputs("{\"sessions\":[", out);
    for (size_t i = 0; i < fo.n; i++) {
        rpt_ctx c;
        rpt_agg a;
        if (!pick[i])
            continue;
        if (rpt_ctx_init(&c) || rpt_agg_init(&a)) {
            rpt_ctx_release(&c);
            snprintf(err, errlen, "out of memory");
            rc = GPUFL_ENOMEM;
            goto out;
        }
        rc = rpt_session_read(&c, &fo.s[i], rpt_agg_visit, &a, err, errlen);
        if (!rc) {
            rpt_agg_finish(&a);
            if (json) {
                size_t len;
                char *j = rpt_print_json(&c, &a, &fo.s[i], &len);
                if (j) {
                    if (done)
                        fputc(',', out);
                    fwrite(j, 1, len, out);
                    free(j);
                } else {
                    snprintf(err, errlen, "out of memory");
                    rc = GPUFL_ENOMEM;
                }
            } else {
                if (done)
                    fputc('\n', out);
                rpt_print_text(out, &c, &a, &fo.s[i]);
            }
            done++;
        }
        rpt_agg_release(&a);
        rpt_ctx_release(&c);
        if (rc)
            goto out;
    }
    if (json)
        fputs("]}\n", out);
out:
    free(pick);
    rpt_folder_release(&fo);
    return rc;
}
