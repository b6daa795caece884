/*
 * store_sql_capipack.c - the API calls' summary packed on PostgreSQL
 * (schema 31, docs/server.md "API call summary packed on PostgreSQL").
 * capi holds one row per (session, level, bucket, thread); on PostgreSQL
 * each costs a 24-byte tuple header and an index entry, ~128 bytes for
 * two counts: 1.8 B/kernel at rest.  As the timeline's packer does for tl
 * (store_sql_tlpack.c), the maintenance thread packs each range of
 * SQ_TLP_N buckets of a (session, level >= 1, thread) the session has
 * moved past into one capipack row: its rows deleted (DELETE ...
 * RETURNING: what is packed is what was deleted, even with ingest
 * upserting into the range at the same time) and added to the range's
 * pack, one transaction (a kill leaves the rows or the pack).  A late
 * call's upsert makes a row again beside the pack; /calls adds the two
 * (store_sql_q_capi.c) and the next pass folds it in.  SQLite keeps its
 * rows (WITHOUT ROWID: in key order already).  The pass is the
 * timeline's (sq_tlp_pass), with capi's tables and columns.
 */
#include "store_sql_int.h"
#include "store_sql_capipack.h"

#include <gpufl/gpufl.h>

_Static_assert(SQ_CAPP_LVL_MAX < RL_TL_LEVELS, "capi's levels");

int srv_store_capi_pack(srv_store *s, uint64_t *packs, uint64_t *rows)
{
    static const sq_tlp_kind capi = {
        .rows = "capi",
        .packs = "capipack",
        .lane = "tid",
        .lane_word = "thread",
        .top = 0,
        .lvl_min = SQ_CAPP_LVL_MIN,
        .lvl_max = SQ_CAPP_LVL_MAX,
        .bad_what = "API call summary range(s) have a pack that does not"
                    " decode; their rows stay rows and /calls over them"
                    " answers an error (--log-level=debug names them)"
    };
    return sq_tlp_pass(s, &capi, &s->capi_unpackable, packs, rows);
}
