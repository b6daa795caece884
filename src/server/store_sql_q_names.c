/*
 * store_sql_q_names.c - the display and recorded names of a kernel page
 * read from blocks (store_sql_q_kernels.c), one statement for the page's
 * distinct name ids instead of a lookup per kernel.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kblock.h"
#include "store_sql_q.h"

int sq_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Ids of names one statement of page_names looks up. */
#define PAGE_NAMES_IN 100

void sq_page_names_free(sq_page_names *pn)
{
    for (size_t i = 0; i < pn->n; i++) {
        free(pn->disp[i]);
        free(pn->mang[i]);
    }
    free(pn->ids);
    free(pn->disp);
    free(pn->mang);
    memset(pn, 0, sizeof(*pn));
}

int sq_names_init(sq_page_names *pn, size_t n)
{
    memset(pn, 0, sizeof(*pn));
    pn->ids = malloc((n ? n : 1) * sizeof(*pn->ids));
    pn->disp = calloc(n ? n : 1, sizeof(*pn->disp));
    pn->mang = calloc(n ? n : 1, sizeof(*pn->mang));
    return pn->ids && pn->disp && pn->mang ? GPUFL_OK : GPUFL_ENOMEM;
}

int sq_names_lookup(qctx *c, size_t n, sq_page_names *pn)
{
    size_t k = 0;
    int rc;

    qsort(pn->ids, n, sizeof(*pn->ids), sq_cmp_i64);
    for (size_t i = 0; i < n; i++)
        if (!k || pn->ids[i] != pn->ids[k - 1])
            pn->ids[k++] = pn->ids[i];
    pn->n = k;
    /* PostgreSQL: the ids in one statement (a step there is a round
     * trip); SQLite: one short statement stepped per id (parsing one of
     * ~80 parameters cost more than the steps: 8 % of a page) */
    for (size_t at = 0, nin = 0; at < k; at += nin) {
        int pg = sdb_dialect(c->db) == SDB_POSTGRES;
        nin = !pg ? 1 : k - at < PAGE_NAMES_IN ? k - at : PAGE_NAMES_IN;
        if (!pg && at) {
            sdb_reset(c->st); /* the statement of the ids before */
        } else {
            char sql[160 + PAGE_NAMES_IN * 6];
            size_t len = (size_t)snprintf(
                sql, sizeof(sql),
                "SELECT id, coalesce(demangled, name, ''), coalesce(name, '')"
                " FROM dicts WHERE sess=?1 AND id IN (");
            for (size_t i = 0; i < nin; i++)
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s?%zu",
                                        i ? "," : "", i + 2);
            snprintf(sql + len, sizeof(sql) - len, ")");
            if ((rc = q_prepare(c, sql)) != 0)
                return rc;
        }
        qbind_i64(c->st, 1, c->sess);
        for (size_t i = 0; i < nin; i++)
            qbind_i64(c->st, (int)(i + 2), pn->ids[at + i]);
        while ((rc = sdb_step(c->st)) == SDB_ROW) {
            int64_t id = qcol_i64(c->st, 0);
            int64_t *x =
                bsearch(&id, pn->ids + at, nin, sizeof(int64_t), sq_cmp_i64);
            size_t i;
            if (!x)
                continue;
            i = (size_t)(x - pn->ids);
            free(pn->disp[i]);
            free(pn->mang[i]);
            pn->disp[i] = strdup(qcol_text(c->st, 1));
            pn->mang[i] = strdup(qcol_text(c->st, 2));
            if (!pn->disp[i] || !pn->mang[i])
                return GPUFL_ENOMEM;
        }
        if (rc != SDB_DONE)
            return sq_err(rc);
    }
    return GPUFL_OK;
}

int sq_page_names_get(qctx *c, const kblock_ev *ev, size_t n, sq_page_names *pn)
{
    int rc;

    if (!n) {
        memset(pn, 0, sizeof(*pn));
        return GPUFL_OK;
    }
    if ((rc = sq_names_init(pn, n)) != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        pn->ids[i] = ev[i].name_id;
    return sq_names_lookup(c, n, pn);
}

const char *sq_names_str(const sq_page_names *pn, int64_t id, int mangled)
{
    const int64_t *x =
        pn->n ? bsearch(&id, pn->ids, pn->n, sizeof(int64_t), sq_cmp_i64)
              : NULL;
    const char *v = x ? (mangled ? pn->mang : pn->disp)[x - pn->ids] : NULL;
    return v ? v : "";
}
