/*
 * store_sql_schema.c - the store's schema: every migration from the first
 * table on, written once in SQLite's types (mapped for PostgreSQL), with
 * what one database adds alone, and the migration of a database forward
 * at open, one transaction per step, versioned in schema_version.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Migration 12 (below): the call bounds of the stored kernels and syncs,
 * and the long kernels of the stored sessions. */
#define SQ_M12_BOUNDS                                                          \
    "UPDATE sessions SET api_lo=(SELECT min(-k.api_off - k.api_dur) FROM"      \
    " kernels k WHERE k.sess=sessions.id AND " SQ_API_OK_K "),"                \
    " api_hi=(SELECT max(-k.api_off) FROM kernels k WHERE"                     \
    " k.sess=sessions.id AND " SQ_API_OK_K "),"                                \
    " op_lo=(SELECT min(-dur) FROM ops WHERE ops.sess=sessions.id AND"         \
    " ops.type=8), op_hi=(SELECT max(0) FROM ops WHERE"                        \
    " ops.sess=sessions.id AND ops.type=8);"
#define SQ_M12_KLONG                                                           \
    "CREATE TABLE klong(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"          \
    " ts INTEGER NOT NULL, dur INTEGER NOT NULL, lane INTEGER NOT NULL,"       \
    " name_id INTEGER, corr INTEGER, PRIMARY KEY(sess, seq)) WITHOUT ROWID;"   \
    "CREATE INDEX klong_ts ON klong(sess, ts);"                                \
    "INSERT INTO klong SELECT sess, seq, ts, dur, (coalesce(dev, 0)<<32) |"    \
    " (coalesce(stream, 0) & 4294967295), name_id, corr FROM kernels WHERE"    \
    " dur > " RL_TL_LONG_STR ";"

static const char *const migrations[] = {
    /* 1: the initial schema */
    "CREATE TABLE sessions(id INTEGER PRIMARY KEY, sid TEXT NOT NULL UNIQUE,"
    " app TEXT, host TEXT, pid INTEGER, start_ns INTEGER, lib TEXT,"
    " simulated INTEGER, header TEXT, state TEXT NOT NULL DEFAULT 'running',"
    " end_reason TEXT, first_ts INTEGER, last_ts INTEGER, last_seen INTEGER,"
    " keep INTEGER NOT NULL DEFAULT 0, n_lines INTEGER NOT NULL DEFAULT 0,"
    " n_kernels INTEGER NOT NULL DEFAULT 0, n_ops INTEGER NOT NULL DEFAULT 0,"
    " n_scopes INTEGER NOT NULL DEFAULT 0, n_samples INTEGER NOT NULL"
    " DEFAULT 0, n_profile INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX sessions_start ON sessions(start_ns, id);"
    "CREATE INDEX sessions_host ON sessions(host, app);"
    "CREATE TABLE lines(sess INTEGER NOT NULL, st INTEGER NOT NULL,"
    " seq INTEGER NOT NULL, type INTEGER NOT NULL, ts INTEGER NOT NULL,"
    " body TEXT, PRIMARY KEY(sess, st, seq)) WITHOUT ROWID;"
    "CREATE TABLE dicts(sess INTEGER NOT NULL, id INTEGER NOT NULL,"
    " kind INTEGER NOT NULL, name TEXT, name_id INTEGER, parent INTEGER,"
    " depth INTEGER, regs INTEGER, smem INTEGER, dsmem INTEGER, lmem INTEGER,"
    " occ REAL, lim TEXT, bx INTEGER, by INTEGER, bz INTEGER, body TEXT,"
    " PRIMARY KEY(sess, id)) WITHOUT ROWID;"
    "CREATE TABLE kernels(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " ts INTEGER NOT NULL, dur INTEGER NOT NULL, dev INTEGER, stream INTEGER,"
    " corr INTEGER, name_id INTEGER, cfg INTEGER, gx INTEGER, gy INTEGER,"
    " gz INTEGER, bx INTEGER, by INTEGER, bz INTEGER, regs INTEGER,"
    " smem INTEGER, occ REAL, scope INTEGER, path INTEGER, stack INTEGER,"
    " api_off INTEGER, api_dur INTEGER, flags INTEGER,"
    " PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE INDEX kernels_ts ON kernels(sess, ts, seq);"
    "CREATE INDEX kernels_dur ON kernels(sess, dur, seq);"
    "CREATE TABLE ops(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " type INTEGER NOT NULL, ts INTEGER NOT NULL, dur INTEGER, dev INTEGER,"
    " stream INTEGER, corr INTEGER, kind TEXT, bytes INTEGER, scope INTEGER,"
    " path INTEGER, stack INTEGER, flags INTEGER,"
    " PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE INDEX ops_ts ON ops(sess, ts, seq);"
    "CREATE TABLE scopes(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " type INTEGER NOT NULL, id INTEGER NOT NULL, ts INTEGER NOT NULL,"
    " name INTEGER, path INTEGER, parent INTEGER, depth INTEGER, tid INTEGER,"
    " dur INTEGER, flags INTEGER, PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE INDEX scopes_id ON scopes(sess, id);"
    "CREATE TABLE sass(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " pcsamp INTEGER NOT NULL, dev INTEGER, func INTEGER, file INTEGER,"
    " line INTEGER, pc INTEGER, inst INTEGER, thread_inst INTEGER,"
    " sectors INTEGER, sectors_ideal INTEGER, samples INTEGER, scope INTEGER,"
    " path INTEGER, PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE TABLE stalls(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " reason TEXT NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY(sess, seq, reason)) WITHOUT ROWID;"
    "CREATE TABLE samples(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " ts INTEGER NOT NULL, src INTEGER NOT NULL, f0 REAL, f1 REAL, f2 REAL,"
    " f3 REAL, f4 REAL, f5 REAL, f6 REAL, f7 REAL, f8 REAL, f9 REAL,"
    " f10 REAL, f11 REAL, f12 REAL, f13 REAL, f14 REAL, f15 REAL, f16 REAL,"
    " f17 REAL, f18 REAL, f19 REAL, f20 REAL,"
    " PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE INDEX samples_ts ON samples(sess, src, ts);"
    "CREATE TABLE kagg(sess INTEGER NOT NULL, name_id INTEGER NOT NULL,"
    " n INTEGER, total INTEGER, min INTEGER, max INTEGER, sum_occ REAL,"
    " n_occ INTEGER, regs INTEGER, smem INTEGER, hist BLOB,"
    " PRIMARY KEY(sess, name_id)) WITHOUT ROWID;"
    "CREATE TABLE tl(sess INTEGER NOT NULL, lvl INTEGER NOT NULL,"
    " lane INTEGER NOT NULL, b INTEGER NOT NULL, n INTEGER, busy INTEGER,"
    " top_name INTEGER, top_dur INTEGER,"
    " PRIMARY KEY(sess, lvl, lane, b)) WITHOUT ROWID;"
    "CREATE TABLE kscope(sess INTEGER NOT NULL, scope INTEGER NOT NULL,"
    " n INTEGER, gpu_ns INTEGER, PRIMARY KEY(sess, scope)) WITHOUT ROWID;"
    "CREATE TABLE keys(id INTEGER PRIMARY KEY, name TEXT, role TEXT NOT NULL,"
    " prefix TEXT, hash TEXT NOT NULL UNIQUE, created INTEGER,"
    " last_used INTEGER, revoked INTEGER);",
    /* 2: the duration index split into epochs of 2^16 seq (SQ_DUR_SHIFT):
     * a batch's inserts land in the newest epoch's few pages instead of
     * pages all over a (sess, dur) index; the kernel pages merged the
     * epochs to sort by duration (until 7) */
    "DROP INDEX kernels_dur;"
    "CREATE INDEX kernels_dur ON kernels(sess, (seq>>16), dur, seq);",
    /* 3: timeline level 0 is 2^18 ns wide, no longer 2^16 (rollup.h);
     * rebuilt from the kernels, approximately: a kernel's busy time all
     * in its first bucket, and no top kernel name (0) */
    "DELETE FROM tl WHERE lvl=0;"
    "INSERT INTO tl SELECT sess, 0, (coalesce(dev, 0)<<32) |"
    " (coalesce(stream, 0) & 4294967295), ts>>18, count(*), sum(dur), 0,"
    " max(dur) FROM kernels GROUP BY sess, (coalesce(dev, 0)<<32) |"
    " (coalesce(stream, 0) & 4294967295), ts>>18;",
    /* 4: idle verdicts (store_sql_fleet.c): every verdict line, and the
     * latest per (host, kind, GPU index or session name) */
    "CREATE TABLE verdicts(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " ts INTEGER NOT NULL, host TEXT NOT NULL, kind TEXT NOT NULL,"
    " dev INTEGER, vkey TEXT NOT NULL, state TEXT NOT NULL, since INTEGER,"
    " simulated INTEGER, body TEXT NOT NULL,"
    " PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE INDEX verdicts_ts ON verdicts(ts, sess, seq);"
    "CREATE INDEX verdicts_key ON verdicts(host, kind, vkey, ts);"
    "CREATE TABLE fleet(host TEXT NOT NULL, kind TEXT NOT NULL,"
    " vkey TEXT NOT NULL, dev INTEGER, ts INTEGER NOT NULL, sess INTEGER,"
    " seq INTEGER, simulated INTEGER, body TEXT NOT NULL,"
    " PRIMARY KEY(host, kind, vkey)) WITHOUT ROWID;",
    /* 5: memory profiles (store_sql_memprof.c): one row per POSTed
     * profile, one per stack of it (frames as JSON array text) */
    "CREATE TABLE memprofs(id INTEGER PRIMARY KEY, host TEXT NOT NULL,"
    " pid INTEGER NOT NULL, comm TEXT, sess INTEGER, sid TEXT,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    " source TEXT NOT NULL, simulated INTEGER NOT NULL,"
    " nstacks INTEGER NOT NULL, alloc_bytes INTEGER NOT NULL,"
    " inuse_bytes INTEGER NOT NULL, received INTEGER NOT NULL);"
    "CREATE INDEX memprofs_hp ON memprofs(host, pid, id);"
    "CREATE INDEX memprofs_sid ON memprofs(sid, id);"
    "CREATE TABLE memsamples(prof INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " frames TEXT NOT NULL, alloc_bytes INTEGER, alloc_count INTEGER,"
    " free_bytes INTEGER, free_count INTEGER, inuse_bytes INTEGER,"
    " inuse_count INTEGER, fail_bytes INTEGER, fail_count INTEGER,"
    " PRIMARY KEY(prof, idx)) WITHOUT ROWID;",
    /* 6: retention of memory profiles (store_sql_admin.c): oldest by
     * end first, and unlinking those of a pruned session */
    "CREATE INDEX memprofs_end ON memprofs(end_ns, id);"
    "CREATE INDEX memprofs_sess ON memprofs(sess);",
    /* 7: no duration index on kernels (a quarter of SQLite's ingest
     * time); instead each session's 4096 longest and 4096 shortest
     * kernels (store_sql_ext.c), filled here from what is stored */
    "DROP INDEX kernels_dur;"
    "CREATE TABLE kext(sess INTEGER NOT NULL, side INTEGER NOT NULL,"
    " dur INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " PRIMARY KEY(sess, side, dur, seq)) WITHOUT ROWID;"
    "INSERT INTO kext SELECT sess, 0, dur, seq FROM (SELECT sess, dur, seq,"
    " row_number() OVER (PARTITION BY sess ORDER BY dur DESC, seq DESC)"
    " AS rn FROM kernels) t WHERE rn <= 4096;"
    "INSERT INTO kext SELECT sess, 1, dur, seq FROM (SELECT sess, dur, seq,"
    " row_number() OVER (PARTITION BY sess ORDER BY dur, seq) AS rn"
    " FROM kernels) t WHERE rn <= 4096;",
    /* 8: system samples per 60 s bucket (store_sql_rollup.c): what a
     * day-long System view reads instead of 86 400 samples per source;
     * filled here from what is stored */
    "CREATE TABLE srl(sess INTEGER NOT NULL, src INTEGER NOT NULL,"
    " b INTEGER NOT NULL, t0 INTEGER NOT NULL, n INTEGER NOT NULL," SRL_LIST(
        SRL_F) " PRIMARY KEY(sess, src, b)) WITHOUT ROWID;"
               "INSERT INTO srl SELECT sess, src, ts / 60000000000, min(ts),"
               " count(*)" SRL_LIST(SRL_AGG) " FROM samples GROUP BY sess,"
                                             " src, ts / 60000000000;",
    /* 9: a version of each session's kext, bumped by every batch that
     * changes it: a server whose heaps are older reloads them (two
     * servers on one PostgreSQL) */
    "ALTER TABLE sessions ADD COLUMN kext_ver INTEGER NOT NULL DEFAULT 0;",
    /* 10: the seq ranges of each (session, stream) that are stored
     * (store_sql_gaps.c), filled from every table holding lines (UNION:
     * a seq twice counts once); the streams a session writes (a session
     * line's "streams", default all three) and, as bits, those that have
     * ended: a session ends when all its streams have.  Sessions already
     * ended keep that state. */
    "CREATE TABLE seqr(sess INTEGER NOT NULL, st INTEGER NOT NULL,"
    " lo INTEGER NOT NULL, hi INTEGER NOT NULL,"
    " PRIMARY KEY(sess, st, lo)) WITHOUT ROWID;"
    "INSERT INTO seqr SELECT sess, st, min(seq), max(seq) FROM (SELECT sess,"
    " st, seq, seq - row_number() OVER (PARTITION BY sess, st ORDER BY seq)"
    " AS g FROM (SELECT sess, st, seq FROM lines UNION SELECT sess, 0, seq"
    " FROM kernels UNION SELECT sess, 0, seq FROM ops UNION SELECT sess, 1,"
    " seq FROM scopes UNION SELECT sess, 1, seq FROM sass UNION SELECT sess,"
    " 2, seq FROM samples) u) t GROUP BY sess, st, g;"
    "ALTER TABLE sessions ADD COLUMN streams INTEGER NOT NULL DEFAULT 7;"
    "ALTER TABLE sessions ADD COLUMN ended INTEGER NOT NULL DEFAULT 0;"
    "UPDATE sessions SET ended=(SELECT coalesce(sum(DISTINCT CASE st WHEN 0"
    " THEN 1 WHEN 1 THEN 2 ELSE 4 END), 0) FROM lines WHERE"
    " lines.sess=sessions.id AND lines.type=2);",
    /* 11: the hosts an ingest key may write for, comma-separated (NULL:
     * any host) */
    "ALTER TABLE keys ADD COLUMN hosts TEXT;",
    /* 12: names as the compiler wrote them and the API calls (docs/api.md
     * "Names", "calls"): a name's demangled form (NULL before); the
     * thread of a kernel's launch call; an op's API call and thread (a
     * sync's tid was not kept before); per session the bounds of a
     * kernel's start minus its call's exit (api_lo) and entry (api_hi),
     * and the same for ops (op_lo, op_hi), so the calls of a time range
     * are found through the ts indexes (store_sql_q_calls.c); and the
     * kernels too long for the timeline rollup's spread (klong,
     * RL_TL_LONG_NS).  A stored call counts only when its times are
     * times (SQ_API_OK: older servers did not check). */
    "ALTER TABLE dicts ADD COLUMN demangled TEXT;"
    "ALTER TABLE kernels ADD COLUMN tid INTEGER;"
    "ALTER TABLE ops ADD COLUMN tid INTEGER;"
    "ALTER TABLE ops ADD COLUMN api_off INTEGER;"
    "ALTER TABLE ops ADD COLUMN api_dur INTEGER;"
    "ALTER TABLE sessions ADD COLUMN api_lo INTEGER;"
    "ALTER TABLE sessions ADD COLUMN api_hi INTEGER;"
    "ALTER TABLE sessions ADD COLUMN op_lo INTEGER;"
    "ALTER TABLE sessions ADD COLUMN op_hi INTEGER;" SQ_M12_BOUNDS SQ_M12_KLONG,
    /* 13: OOM reports of gpufl memprof --oom (store_sql_memoom.c): the
     * report as answered (body), and the columns the list shows and
     * filters on */
    "CREATE TABLE memooms(id INTEGER PRIMARY KEY, host TEXT NOT NULL,"
    " pid INTEGER NOT NULL, comm TEXT, sess INTEGER, sid TEXT,"
    " ts INTEGER NOT NULL, api TEXT NOT NULL, bytes INTEGER NOT NULL,"
    " dev INTEGER, dev_source TEXT NOT NULL, free_bytes INTEGER,"
    " total_bytes INTEGER, live_bytes INTEGER NOT NULL,"
    " source TEXT NOT NULL, simulated INTEGER NOT NULL, body TEXT NOT NULL,"
    " received INTEGER NOT NULL);"
    "CREATE INDEX memooms_hp ON memooms(host, pid, id);"
    "CREATE INDEX memooms_sid ON memooms(sid, id);"
    "CREATE INDEX memooms_ts ON memooms(ts, id);"
    "CREATE INDEX memooms_sess ON memooms(sess);",
    /* 14: jobs and regressions (docs/api.md "Jobs", "Regressions"): a
     * session's job, rank, world size, local rank, where the job id came
     * from, its step scope and its simulated perturbation (NULL when the
     * session line did not say); whether the regression scan has run on
     * it (regress: 0 not yet, 1 done - sessions stored before are not
     * scanned), and what it found, per kernel name (store_sql_regress.c);
     * sessions by app, for a scan's baseline and the /metrics gauge */
    "ALTER TABLE sessions ADD COLUMN job TEXT;"
    "ALTER TABLE sessions ADD COLUMN rank INTEGER;"
    "ALTER TABLE sessions ADD COLUMN world_size INTEGER;"
    "ALTER TABLE sessions ADD COLUMN local_rank INTEGER;"
    "ALTER TABLE sessions ADD COLUMN job_source TEXT;"
    "ALTER TABLE sessions ADD COLUMN step_scope TEXT;"
    "ALTER TABLE sessions ADD COLUMN sim_perturb TEXT;"
    "ALTER TABLE sessions ADD COLUMN regress INTEGER NOT NULL DEFAULT 0;"
    "UPDATE sessions SET regress=1;"
    "CREATE INDEX sessions_job ON sessions(job, rank);"
    "CREATE INDEX sessions_regress ON sessions(regress, state);"
    "CREATE INDEX sessions_app ON sessions(app, start_ns);"
    "CREATE TABLE regressions(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " app TEXT NOT NULL, ts INTEGER NOT NULL, kind TEXT NOT NULL,"
    " name TEXT NOT NULL, base_median REAL, cur_median REAL, ratio REAL,"
    " lo REAL, hi REAL, p REAL, noise REAL, base_count REAL,"
    " cur_count INTEGER, base_sessions INTEGER NOT NULL,"
    " PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE INDEX regressions_app ON regressions(app, ts, sess);",
    /* 15: capture requests (store_sql_capture.c, docs/api.md "Capture
     * requests"): what an admin asked of a host's processes, its state
     * (pending, delivered, done, failed, expired) and the agent's answer;
     * times are Unix seconds */
    "CREATE TABLE captures(id INTEGER PRIMARY KEY, host TEXT NOT NULL,"
    " pid INTEGER, action TEXT NOT NULL, for_ms INTEGER NOT NULL,"
    " note TEXT, state TEXT NOT NULL, created INTEGER NOT NULL,"
    " expires INTEGER NOT NULL, delivered INTEGER, finished INTEGER,"
    " reason TEXT, result TEXT);"
    "CREATE INDEX captures_host ON captures(host, state, id);"
    "CREATE INDEX captures_state ON captures(state, id);",
    /* 16: GPU waste (store_sql_waste.c): every `waste` line of gpufl idle
     * (busy and wasted GPU seconds of one owner on one GPU over t0..t1),
     * and the hourly rollup /fleet/waste reads: per hour, dimension
     * (user, namespace, pod, job, app, host, gpu: SRV_WBY_*), owner key
     * and GPU model, the seconds busy and wasted per reason */
    "CREATE TABLE waste(sess INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " ts INTEGER NOT NULL, host TEXT NOT NULL, dev INTEGER NOT NULL,"
    " uuid TEXT NOT NULL, model TEXT NOT NULL, usr TEXT NOT NULL,"
    " ns TEXT NOT NULL, pod TEXT NOT NULL, container TEXT NOT NULL,"
    " job TEXT NOT NULL, app TEXT NOT NULL, t0 INTEGER NOT NULL,"
    " t1 INTEGER NOT NULL, busy REAL NOT NULL, w_idle REAL NOT NULL,"
    " w_held REAL NOT NULL, w_phantom REAL NOT NULL, w_stuck REAL NOT NULL,"
    " w_alloc REAL NOT NULL, simulated INTEGER NOT NULL,"
    " PRIMARY KEY(sess, seq)) WITHOUT ROWID;"
    "CREATE INDEX waste_t1 ON waste(t1);"
    "CREATE TABLE wasteh(dim INTEGER NOT NULL, hour INTEGER NOT NULL,"
    " key TEXT NOT NULL, model TEXT NOT NULL, busy REAL NOT NULL,"
    " w_idle REAL NOT NULL, w_held REAL NOT NULL, w_phantom REAL NOT NULL,"
    " w_stuck REAL NOT NULL, w_alloc REAL NOT NULL,"
    " simulated INTEGER NOT NULL,"
    " PRIMARY KEY(dim, hour, key, model)) WITHOUT ROWID;"
    /* ... the same per UTC day (a month of a thousand pods or GPUs is
     * 30,000 rows, not 720,000) ... */
    "CREATE TABLE wasted(dim INTEGER NOT NULL, day INTEGER NOT NULL,"
    " key TEXT NOT NULL, model TEXT NOT NULL, busy REAL NOT NULL,"
    " w_idle REAL NOT NULL, w_held REAL NOT NULL, w_phantom REAL NOT NULL,"
    " w_stuck REAL NOT NULL, w_alloc REAL NOT NULL,"
    " simulated INTEGER NOT NULL,"
    " PRIMARY KEY(dim, day, key, model)) WITHOUT ROWID;"
    /* ... and each GPU's verdicts as runs of one state (a verdict holds
     * at most 10 minutes, SQ_RUN_HOLD_NS), the strips of /fleet/waste:
     * the daemon repeats an unchanged verdict every minute, so a month
     * is a few runs, not 43,200 verdicts; made from those stored */
    "CREATE TABLE vruns(host TEXT NOT NULL, dev INTEGER NOT NULL,"
    " t0 INTEGER NOT NULL, t1 INTEGER NOT NULL, state TEXT NOT NULL,"
    " sess INTEGER NOT NULL, PRIMARY KEY(host, dev, t0, sess))"
    " WITHOUT ROWID;"
    "INSERT INTO vruns SELECT host, dev, min(ts), max(ts), state, sess"
    " FROM (SELECT host, dev, ts, state, sess, sum(brk) OVER (PARTITION BY"
    " host, dev ORDER BY ts, sess, seq ROWS UNBOUNDED PRECEDING) AS grp"
    " FROM (SELECT host, dev, ts, state, sess, seq, CASE WHEN lag(state)"
    " OVER w = state AND lag(sess) OVER w = sess AND ts - lag(ts) OVER w"
    " <= 600000000000 THEN 0 ELSE 1 END AS brk FROM verdicts WHERE"
    " kind='gpu' AND dev IS NOT NULL WINDOW w AS (PARTITION BY host, dev"
    " ORDER BY ts, sess, seq)) a) b GROUP BY host, dev, grp, state, sess;",
    /* 17: a capture request's claims (a claim is a lease: handed out
     * again when its agent reports nothing); the flight recorder's
     * trigger lines found per session without reading its other lines
     * (type 20 = EV_TRIGGER; a literal, so that both databases can use
     * the partial index) */
    "ALTER TABLE captures ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
    "UPDATE captures SET attempts=1 WHERE delivered IS NOT NULL;"
    "CREATE INDEX lines_trigger ON lines(sess, ts) WHERE type=20;",
    /* 18: what a regression finding is about (store_sql_regress.c):
     * "kernel" (every finding before), "scope" (a scope path's wall
     * time), "step" (the step scope's), "memory" (peak GPU memory) */
    "ALTER TABLE regressions ADD COLUMN subject TEXT NOT NULL DEFAULT"
    " 'kernel';",
    /* 19: kernel blocks (store_sql_kblocks.c, docs/server.md "Kernel
     * blocks"): up to SQ_KB_RUN kernels of one (session, stream) in one
     * compressed column block (kblock.h), with its index: seq and time
     * ranges, count, min/max duration.  Empty unless --kernel-store=blocks
     * compacts; the blocks index finds a block by seq (kernel by id, the
     * ingest's duplicate check) and by time. */
    "CREATE TABLE IF NOT EXISTS kblocks(sess INTEGER NOT NULL, stream INTEGER "
    "NOT NULL,"
    " seq_lo INTEGER NOT NULL, seq_hi INTEGER NOT NULL, t_lo INTEGER NOT"
    " NULL, t_hi INTEGER NOT NULL, n INTEGER NOT NULL, dur_min INTEGER NOT"
    " NULL, dur_max INTEGER NOT NULL, block BLOB NOT NULL,"
    " PRIMARY KEY(sess, stream, seq_lo));"
    "CREATE INDEX IF NOT EXISTS kblocks_seq ON kblocks(sess, seq_hi);",
    /* 20: the cold tier (store_sql_kcold.c, docs/server.md "Cold tier"):
     * one row per object in S3, named by the stub that replaced its
     * kblocks row's bytes; a row whose stub no kblocks row holds any more
     * (pruned, thawed) is an object to delete.  Not one of a session's
     * tables for retention: the sweep deletes the object, then the row. */
    "CREATE TABLE IF NOT EXISTS kcold(sess INTEGER NOT NULL, stream INTEGER"
    " NOT NULL, seq_lo INTEGER NOT NULL, stub BLOB NOT NULL, moved INTEGER"
    " NOT NULL, PRIMARY KEY(sess, stream, seq_lo, stub));",
    /* 21: the API calls' summary kept at ingest (store_sql_capi.c): per
     * session, timeline level (rollup.h), bucket and CPU thread, calls
     * started and ns covered - keyed by bucket before thread, so a window
     * is one range; the calls longer than RL_TL_LONG_NS (their busy time,
     * spread by the query); and the first session row id whose calls all
     * went in with it (older sessions are answered from their rows);
     * IF NOT EXISTS: a database taken back to an older schema by hand
     * (the tests' undo) runs it again */
    "CREATE TABLE IF NOT EXISTS capi(sess INTEGER NOT NULL, lvl INTEGER NOT "
    "NULL,"
    " b INTEGER NOT NULL, tid INTEGER NOT NULL, n INTEGER NOT NULL,"
    " busy INTEGER NOT NULL, PRIMARY KEY(sess, lvl, b, tid)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS capi_long(sess INTEGER NOT NULL, ts INTEGER "
    "NOT NULL,"
    " seq INTEGER NOT NULL, tid INTEGER NOT NULL, dur INTEGER NOT NULL,"
    " PRIMARY KEY(sess, ts, seq)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS capi_from(sess INTEGER NOT NULL);"
    "INSERT INTO capi_from SELECT coalesce(max(id), 0) + 1 FROM sessions"
    " WHERE NOT EXISTS (SELECT 1 FROM capi_from);",
    /* 22: each kernel block's names (store_sql_kblocks.c sq_kb_put, in
     * the block's transaction; deleted with it): per name its count and
     * min/max duration, so that a sort by duration filtered by name reads
     * only the blocks where that name can place (every block holds every
     * name: the block's own dur_min/dur_max cannot prune).  A block
     * written before has no rows here and is read as holding any name. */
    "CREATE TABLE IF NOT EXISTS kbnames(sess INTEGER NOT NULL, stream "
    "INTEGER NOT NULL, seq_lo INTEGER NOT NULL, name_id INTEGER NOT NULL,"
    " n INTEGER NOT NULL, dur_min INTEGER NOT NULL, dur_max INTEGER NOT"
    " NULL, PRIMARY KEY(sess, stream, seq_lo, name_id)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS kbnames_name ON kbnames(sess, name_id);",
    /* 23: per (session, stream) its kernel rows the compactor can take
     * (store_sql_kblocks_compact.c groups_find: its work without a GROUP BY over
     * every kernel row), kept in the transaction that writes or deletes
     * the rows (store_sql_kcount.c); filled here from the rows there
     * (again from scratch when a test's undo runs it a second time) */
    "CREATE TABLE IF NOT EXISTS kcount(sess INTEGER NOT NULL, stream INTEGER"
    " NOT NULL, n INTEGER NOT NULL, PRIMARY KEY(sess, stream)) WITHOUT"
    " ROWID;"
    "DELETE FROM kcount;"
    "INSERT INTO kcount SELECT sess, stream, count(*) FROM kernels "
    "WHERE" KB_EXACT " GROUP BY sess, stream;",
    /* 24: the rows of the kext keys whose kernels are in blocks
     * (store_sql_kxrow.c): a kernel row's columns, then the kext side,
     * keyed as kext, so that a page sorted by duration over all names
     * reads a session with blocks as one of rows (kext joined with its
     * kernels' rows) without decoding blocks.  Written in the transaction
     * of the block its kernel goes into, deleted with its kext key; empty
     * here: `gpufl-server migrate` fills it for blocks written before */
    "CREATE TABLE IF NOT EXISTS kxrow(sess INTEGER NOT NULL, seq INTEGER"
    " NOT NULL, ts INTEGER NOT NULL, dur INTEGER NOT NULL, dev INTEGER,"
    " stream INTEGER, corr INTEGER, name_id INTEGER, cfg INTEGER,"
    " gx INTEGER, gy INTEGER, gz INTEGER, bx INTEGER, by INTEGER,"
    " bz INTEGER, regs INTEGER, smem INTEGER, occ REAL, scope INTEGER,"
    " path INTEGER, stack INTEGER, api_off INTEGER, api_dur INTEGER,"
    " flags INTEGER, tid INTEGER, side INTEGER NOT NULL,"
    " PRIMARY KEY(sess, side, dur, seq)) WITHOUT ROWID;",
    /* 25: blocks found by time without walking the session's blocks:
     * an index on their start, and per session the longest time any of
     * its blocks ever spanned (kept by kb_insert in the block's
     * transaction, never lowered), so that "a block ending at or after
     * from" becomes "starting at or after from - span" - a range of the
     * index (docs/server.md "At 100M kernels"). */
    "CREATE INDEX IF NOT EXISTS kblocks_t ON kblocks(sess, t_lo);"
    "CREATE TABLE IF NOT EXISTS kbspan(sess INTEGER NOT NULL, span INTEGER"
    " NOT NULL, PRIMARY KEY(sess)) WITHOUT ROWID;"
    "DELETE FROM kbspan;"
    "INSERT INTO kbspan SELECT sess, max(t_hi - t_lo) FROM kblocks GROUP BY"
    " sess;",
    /* 26: the small blocks (ingest's, fewer than SQ_KB_RUN kernels) by
     * (session, stream), for the compactor's merge pass (SQ_KB_MERGES_SQL):
     * a range of this index instead of every kblocks row read under the
     * writer's lock each pass (each row's first page holds its bytes; at
     * 100M kernels 24 000 rows).  n in it: the search reads no row.
     * IF NOT EXISTS: a test's undo of 24 runs it again */
    "CREATE INDEX IF NOT EXISTS kblocks_small ON kblocks(sess, stream,"
    " seq_lo, n) WHERE" SQ_KB_SMALL ";",
    /* 27: a sort by duration filtered by one name reads that name's
     * blocks longest first straight from kbnames (kbnames_dur replaces
     * kbnames_name, whose (sess, name_id) prefix it keeps for the other
     * reads) and stops at the first block that cannot place
     * (store_sql_kblocks_names.c), so the blocks without kbnames rows
     * (written before schema 22) are listed in kbunnamed, not found by
     * walking every block; filled here (from scratch when a test's undo
     * runs it again), deleted with their block */
    "CREATE TABLE IF NOT EXISTS kbunnamed(sess INTEGER NOT NULL, stream"
    " INTEGER NOT NULL, seq_lo INTEGER NOT NULL, PRIMARY KEY(sess, stream,"
    " seq_lo)) WITHOUT ROWID;"
    "DELETE FROM kbunnamed;"
    "INSERT INTO kbunnamed SELECT sess, stream, seq_lo FROM kblocks k WHERE"
    " NOT EXISTS (SELECT 1 FROM kbnames n WHERE n.sess=k.sess AND"
    " n.stream=k.stream AND n.seq_lo=k.seq_lo);"
    "DROP INDEX IF EXISTS kbnames_name;"
    "CREATE INDEX IF NOT EXISTS kbnames_dur ON kbnames(sess, name_id,"
    " dur_max);",
    /* 28: the same shortest first - a sort by duration ascending filtered
     * by name reads that name's blocks by their dur_min in order and
     * stops at the first that cannot place (store_sql_kblocks_names.c);
     * kbnames_dur cannot order them (a block of a long dur_max may hold
     * the name's shortest kernel). */
    "CREATE INDEX IF NOT EXISTS kbnames_dmin ON kbnames(sess, name_id,"
    " dur_min);",
    /* 29: timeline buckets packed (store_sql_tlpack.c): a range of
     * SQ_TLP_N buckets of one (session, level, lane) in one row, varints,
     * once the session has moved past it - on PostgreSQL a tl row costs
     * its 24-byte tuple header, an index entry and, read, a heap page of
     * its own (the upserts scatter them).  Rows of the same bucket may
     * sit beside a pack (a late kernel): the timeline adds both.  IF NOT
     * EXISTS: a database whose version was set back keeps its packs.
     * Since 2026-12-06 SQLite's ingest writes its level 1 here too
     * (store_sql_tl1.c; no schema change: its rows stay beside). */
    "CREATE TABLE IF NOT EXISTS tlpack(sess INTEGER NOT NULL,"
    " lvl INTEGER NOT NULL, lane INTEGER NOT NULL, b0 INTEGER NOT NULL,"
    " data BLOB NOT NULL,"
    " PRIMARY KEY(sess, lvl, lane, b0)) WITHOUT ROWID;",
    /* 30: kbnames packed (store_sql_kbnpack.c): per (session, stream,
     * range of 2^20 seqs, name) one row of the name's entries of the
     * range's blocks (count, duration bounds), and per range its blocks'
     * seq and time ranges once (kbndir) - on PostgreSQL a kbnames row
     * cost ~180 bytes with its three indexes, 7.3 B/kernel.
     * kbnpack_name: the name filters read a name's packs.  SQLite kept
     * its rows until its packer was switched on (docs/server.md "100M a
     * seventh time": no schema change, its rows packed by the next
     * pass). */
    "CREATE TABLE IF NOT EXISTS kbnpack(sess INTEGER NOT NULL,"
    " stream INTEGER NOT NULL, r0 INTEGER NOT NULL, name_id INTEGER NOT"
    " NULL, data BLOB NOT NULL,"
    " PRIMARY KEY(sess, stream, r0, name_id)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS kbnpack_name ON kbnpack(sess, name_id);"
    "CREATE TABLE IF NOT EXISTS kbndir(sess INTEGER NOT NULL,"
    " stream INTEGER NOT NULL, r0 INTEGER NOT NULL, data BLOB NOT NULL,"
    " PRIMARY KEY(sess, stream, r0)) WITHOUT ROWID;",
    /* 31: the API calls' summary packed (store_sql_capipack.c): a range
     * of SQ_TLP_N buckets of one (session, level, thread) of capi in one
     * row, the timeline pack's varints - on PostgreSQL a capi row cost
     * ~128 bytes (tuple header, index entry) for two counts.  Rows of the
     * same bucket may sit beside a pack (a late call): /calls adds both.
     * SQLite keeps its rows (this table stays empty there). */
    "CREATE TABLE IF NOT EXISTS capipack(sess INTEGER NOT NULL,"
    " lvl INTEGER NOT NULL, tid INTEGER NOT NULL, b0 INTEGER NOT NULL,"
    " data BLOB NOT NULL,"
    " PRIMARY KEY(sess, lvl, tid, b0)) WITHOUT ROWID;",
    /* 32: ops in blocks (oblock.c; store_sql_oblocks_ingest.c): with
     * --kernel-store=blocks a batch's ops of a session are one row here,
     * their index beside the bytes - a row of `ops` cost ~77 bytes
     * (SQLite) to ~240 (PostgreSQL, tuple header and two indexes) per op,
     * a block ~9-10 (docs/server.md "Op blocks").  A rowid table, as
     * kblocks: SQLite keeps a WITHOUT ROWID table's rows in its key's
     * B-tree, where rows of kilobytes make it deep and spill anyway.
     * `ops` keeps the rows written before; every reader reads both
     * (store_sql_oblocks_read.c).  oblocks_t: a time range's blocks;
     * oblocks_hi: the ingest's duplicate check (the blocks a replayed
     * seq range meets, none for a batch above all stored). */
    "CREATE TABLE IF NOT EXISTS oblocks(sess INTEGER NOT NULL,"
    " seq_lo INTEGER NOT NULL, seq_hi INTEGER NOT NULL, ts_lo INTEGER NOT"
    " NULL, ts_hi INTEGER NOT NULL, max_dur INTEGER NOT NULL,"
    " n INTEGER NOT NULL, payload BLOB NOT NULL,"
    " PRIMARY KEY(sess, seq_lo));"
    "CREATE INDEX IF NOT EXISTS oblocks_t ON oblocks(sess, ts_lo);"
    "CREATE INDEX IF NOT EXISTS oblocks_hi ON oblocks(sess, seq_hi);",
    /* 33: the cold tier's op blocks (store_sql_kcold.c): kcold's sibling,
     * one row per object of an oblocks row, keyed as oblocks is (a
     * column in kcold would have put a stream no op block has in its
     * key, and the sweep's anti-join looks up each kind's own table by
     * its own key).  Not a session's table for retention: the sweep
     * deletes the object, then the row. */
    "CREATE TABLE IF NOT EXISTS ocold(sess INTEGER NOT NULL, seq_lo INTEGER"
    " NOT NULL, stub BLOB NOT NULL, moved INTEGER NOT NULL,"
    " PRIMARY KEY(sess, seq_lo, stub));",
    /* 34: op blocks found by time as kernel blocks are (migration 25):
     * per session the longest time any of its op blocks ever spanned
     * (kept by sq_ob_put in the block's transaction, never lowered), so
     * that "a block ending at or after from" becomes "starting at or
     * after from - span", a range of oblocks_t, not the session's blocks
     * from its first (store_sql_oblocks_read.c). */
    "CREATE TABLE IF NOT EXISTS obspan(sess INTEGER NOT NULL, span INTEGER"
    " NOT NULL, PRIMARY KEY(sess)) WITHOUT ROWID;"
    "DELETE FROM obspan;"
    "INSERT INTO obspan SELECT sess, max(ts_hi - ts_lo) FROM oblocks GROUP BY"
    " sess;",
    /* 35: PostgreSQL only (migrations_pg) */
    "",
    /* 36: kbnames' rows found by name through one plain index, sorted by
     * duration in the query.  Since schema 30 kbnames is a recent tier -
     * each pass packs its rows (store_sql_kbnpack.c) - so a name has a
     * row per block named since the last pass, not one per block of the
     * session, and kbnames_dur / kbnames_dmin no longer had a long walk
     * to spare the reads; each merge paid them two scattered entries per
     * row (~400 a merged block), under the writer's lock.  PostgreSQL,
     * 2M kernels: the merges held the lock 1.8-3.3 s with them, 1.2-1.5
     * s without (docs/server.md "kbnames: one plain index"). */
    "DROP INDEX IF EXISTS kbnames_dur;"
    "DROP INDEX IF EXISTS kbnames_dmin;"
    "CREATE INDEX IF NOT EXISTS kbnames_nid ON kbnames(sess, name_id);",
    /* 37: kbnames_nid's session as an expression (sess + 0), which only
     * a statement spelling it - the name sorts' read by name
     * (store_sql_kblocks_names.c) - can use.  The packer's ranges and the
     * merges' deletes go by the primary key's (sess, stream, seq_lo);
     * PostgreSQL took kbnames_nid by sess alone for them (every row of
     * the session, filtered: 45-68 ms a statement under the writer's
     * lock) whenever its statistics came from a moment kbnames was
     * nearly empty - the packer empties it, its pages stay - and so
     * estimated a row in a thousand pages, where the smaller index costs
     * less to the planner (docs/server.md "kbnames: the primary key
     * pinned"). */
    "DROP INDEX IF EXISTS kbnames_nid;"
    "CREATE INDEX IF NOT EXISTS kbnames_sn ON kbnames((sess + 0), name_id);",
};
_Static_assert(EV_TRIGGER == 20, "migration 17's lines_trigger spells it");
#define SQ_SCHEMA_VERSION (int)(sizeof(migrations) / sizeof(migrations[0]))

/* What a migration adds on PostgreSQL only, by its index in migrations[]
 * (NULL: nothing).  16: the waste rollups as index-only scans - a heap
 * table is not ordered by its key as SQLite's WITHOUT ROWID ones are, so
 * a month of one dimension was a bitmap heap scan over rows spread among
 * the other dimensions' (docs/server.md "GPU waste"). */
static const char *const migrations_pg[SQ_SCHEMA_VERSION] = {
    [15] = "CREATE INDEX wasteh_cover ON wasteh(dim, hour) INCLUDE (key,"
           " model, busy, w_idle, w_held, w_phantom, w_stuck, w_alloc,"
           " simulated);"
           "CREATE INDEX wasted_cover ON wasted(dim, day) INCLUDE (key,"
           " model, busy, w_idle, w_held, w_phantom, w_stuck, w_alloc,"
           " simulated);",
    /* 35: kernel and op blocks stored as they are.  A bytea over ~2 kB is
     * compressed (pglz) before it goes out of line, and a block is zstd's
     * output already: pglz tried each one and kept none (0 of 600 blocks
     * at 3M kernels), 5 % of the ingest's backend CPU (docs/server.md
     * "PostgreSQL: kext cuts kept on the index").  EXTERNAL: out of line,
     * uncompressed; the rows written before stay as they are. */
    [34] = "ALTER TABLE kblocks ALTER COLUMN block SET STORAGE EXTERNAL;"
           "ALTER TABLE oblocks ALTER COLUMN payload SET STORAGE EXTERNAL;",
};
_Static_assert(RL_TL_LONG_NS == 268173312u, "RL_TL_LONG_STR spells it");

/* The schema is written once, in SQLite's types; PostgreSQL gets them
 * mapped (64-bit integers everywhere, identity keys, bytea). */
static char *ddl_for(const sdb *db, const char *sql)
{
    static const char *const map[][2] = {
        { " INTEGER PRIMARY KEY", " BIGINT GENERATED BY DEFAULT AS IDENTITY"
                                  " PRIMARY KEY" },
        { " WITHOUT ROWID", "" },
        { " INTEGER", " BIGINT" },
        { " REAL", " DOUBLE PRECISION" },
        { " BLOB", " BYTEA" },
    };
    size_t n = strlen(sql), cap = 2 * n + 1024, len = 0;
    char *out = malloc(cap);

    if (!out)
        return NULL;
    if (sdb_dialect(db) != SDB_POSTGRES) {
        memcpy(out, sql, n + 1);
        return out;
    }
    for (const char *p = sql; *p;) {
        size_t k;
        for (k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
            size_t ml = strlen(map[k][0]);
            if (strncmp(p, map[k][0], ml) == 0) {
                size_t rl = strlen(map[k][1]);
                if (len + rl + 1 >= cap)
                    break;
                memcpy(out + len, map[k][1], rl);
                len += rl;
                p += ml;
                break;
            }
        }
        if (k == sizeof(map) / sizeof(map[0]) && len + 2 < cap)
            out[len++] = *p++;
    }
    out[len] = '\0';
    return out;
}

int sq_schema_migrate(sdb *db, char *eb, size_t ec)
{
    sdb_stmt *st = NULL;
    int ver = 0, rc;

    rc = sdb_exec(db, "CREATE TABLE IF NOT EXISTS schema_version(version BIGINT"
                      " NOT NULL)");
    if (rc) {
        snprintf(eb, ec, "cannot create the version table: %s", sdb_errmsg(db));
        return rc;
    }
    if (sdb_prepare(db, "SELECT max(version) FROM schema_version", &st) == 0 &&
        sdb_step(st) == SDB_ROW)
        ver = (int)qcol_i64(st, 0);
    sdb_finalize(st);
    if (ver > SQ_SCHEMA_VERSION) {
        snprintf(eb, ec,
                 "database schema version %d is newer than this"
                 " server (%d)",
                 ver, SQ_SCHEMA_VERSION);
        return GPUFL_ECONFLICT;
    }
    for (int v = ver; v < SQ_SCHEMA_VERSION; v++) {
        char bump[80], *ddl = ddl_for(db, migrations[v]);
        if (!ddl)
            return GPUFL_ENOMEM;
        snprintf(bump, sizeof(bump), "INSERT INTO schema_version VALUES(%d)",
                 v + 1);
        if ((rc = sdb_begin(db)) != 0) {
            free(ddl);
            return rc;
        }
        if ((ddl[0] && sdb_exec(db, ddl) != 0) ||
            (sdb_dialect(db) == SDB_POSTGRES && migrations_pg[v] &&
             sdb_exec(db, migrations_pg[v]) != 0) ||
            sdb_exec(db, bump)) {
            snprintf(eb, ec, "migration %d failed: %s", v + 1, sdb_errmsg(db));
            sdb_exec(db, "ROLLBACK");
            free(ddl);
            return GPUFL_EINTERNAL;
        }
        free(ddl);
        if ((rc = sdb_exec(db, "COMMIT")) != 0)
            return rc;
    }
    return GPUFL_OK;
}
