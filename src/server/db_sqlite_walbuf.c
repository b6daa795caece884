/*
 * db_sqlite_walbuf.c - an SQLite VFS over the default one that writes a
 * transaction's WAL frames in a few pwrites.
 *
 * SQLite appends each WAL frame with two writes, its 24-byte header and
 * its page: an ingest commit of ~140 pages is ~290 pwrite calls, and with
 * the fsync they were ~3 ms of a 15 ms request (docs/server.md, "Where an
 * ingest request's time goes").  Here a WAL file keeps the writes that
 * continue one another in a buffer and hands them to the file system in
 * pieces of WB_CHUNK when that run has to end:
 *  - after the page of a commit frame (a header whose "database size
 *    after commit" is not 0): before SQLite publishes the commit in the
 *    wal-index, where other connections look, the frames are in the file,
 *    whatever the synchronous setting;
 *  - before anything else reaches the file (a read, a sync, a truncate,
 *    its size asked, a file control, the close) or a write elsewhere in
 *    it, so the file sees the writes in SQLite's order;
 *  - when SDB_WALBUF_CAP bytes are held.
 * A write that fails in a flush fails the SQLite call that flushed (the
 * commit frame's at the latest), so no commit is reported without its
 * frames.  What a kill -9 can lose is frames of a transaction not yet
 * committed, which SQLite's recovery drops anyway; with synchronous=FULL
 * the commit's fsync follows the flush, as it followed the writes.
 * Files other than WALs are the default VFS's own, opened in place
 * (their methods are SQLite's; nothing here is on their path).
 */
#include "db_sqlite_walbuf.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* A WAL file: ours first, the default VFS's file after it at WB_HDR. */
typedef struct wb_file {
    sqlite3_file base;
    sqlite3_file *real;
    char *buf;  /* SDB_WALBUF_CAP bytes, allocated at first write */
    size_t len; /* bytes held, for file offset off */
    sqlite3_int64 off;
    int commit; /* the last write was a commit frame's header */
} wb_file;

#define WB_HDR ((sizeof(wb_file) + 15) & ~(size_t)15)
#define WB_FRAME_HDR 24 /* a WAL frame's header (the WAL's own is 32) */
/* Bytes handed to the default VFS in one xWrite: its unix write takes at
 * most 128 KiB - 1 a call (it masks the length with 0x1ffff, SQLite's
 * own writes being a page at most), so a run goes out in pieces of this
 * (31 pages): ~5 calls for an ingest commit instead of ~290. */
#define WB_CHUNK (31u * 4096)

static sqlite3_vfs g_vfs;
static uint64_t g_writes, g_flushes;

static sqlite3_vfs *real_vfs(sqlite3_vfs *v)
{
    return v->pAppData;
}

/* The run held written out; SQLite's code of the first write that
 * failed (the rest of the run is then dropped: SQLite fails the call). */
static int wb_flush(wb_file *p)
{
    int rc = SQLITE_OK;

    for (size_t at = 0; at < p->len && rc == SQLITE_OK; at += WB_CHUNK) {
        size_t n = p->len - at < WB_CHUNK ? p->len - at : WB_CHUNK;
        rc = p->real->pMethods->xWrite(p->real, p->buf + at, (int)n,
                                       p->off + (sqlite3_int64)at);
        __atomic_add_fetch(&g_flushes, 1, __ATOMIC_RELAXED);
    }
    p->len = 0;
    return rc;
}

static int wb_close(sqlite3_file *f)
{
    wb_file *p = (wb_file *)f;
    int rc = wb_flush(p), rc2 = p->real->pMethods->xClose(p->real);

    free(p->buf);
    p->buf = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int wb_read(sqlite3_file *f, void *b, int n, sqlite3_int64 off)
{
    wb_file *p = (wb_file *)f;
    int rc = wb_flush(p);

    return rc != SQLITE_OK ? rc : p->real->pMethods->xRead(p->real, b, n, off);
}

static int wb_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 off)
{
    wb_file *p = (wb_file *)f;
    const unsigned char *h = b;
    int rc, ends;

    __atomic_add_fetch(&g_writes, 1, __ATOMIC_RELAXED);
    /* the page after a commit frame's header ends the transaction's run */
    ends = p->commit;
    p->commit = n == WB_FRAME_HDR && off >= 32 && (h[4] | h[5] | h[6] | h[7]);
    if (p->len &&
        (off != p->off + (sqlite3_int64)p->len ||
         p->len + (size_t)n > SDB_WALBUF_CAP) &&
        (rc = wb_flush(p)) != SQLITE_OK)
        return rc;
    if (n <= 0 || (size_t)n > WB_CHUNK ||
        (!p->buf && !(p->buf = malloc(SDB_WALBUF_CAP)))) {
        /* not held (no memory for it): what is held goes first, so the
         * file still sees SQLite's order */
        if ((rc = wb_flush(p)) != SQLITE_OK)
            return rc;
        return p->real->pMethods->xWrite(p->real, b, n, off);
    }
    if (!p->len)
        p->off = off;
    memcpy(p->buf + p->len, b, (size_t)n);
    p->len += (size_t)n;
    return ends ? wb_flush(p) : SQLITE_OK;
}

static int wb_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    wb_file *p = (wb_file *)f;
    int rc = wb_flush(p);

    return rc != SQLITE_OK ? rc : p->real->pMethods->xTruncate(p->real, size);
}

static int wb_sync(sqlite3_file *f, int flags)
{
    wb_file *p = (wb_file *)f;
    int rc = wb_flush(p);

    return rc != SQLITE_OK ? rc : p->real->pMethods->xSync(p->real, flags);
}

static int wb_size(sqlite3_file *f, sqlite3_int64 *size)
{
    wb_file *p = (wb_file *)f;
    int rc = wb_flush(p);

    return rc != SQLITE_OK ? rc : p->real->pMethods->xFileSize(p->real, size);
}

static int wb_lock(sqlite3_file *f, int l)
{
    wb_file *p = (wb_file *)f;

    return p->real->pMethods->xLock(p->real, l);
}

static int wb_unlock(sqlite3_file *f, int l)
{
    wb_file *p = (wb_file *)f;

    return p->real->pMethods->xUnlock(p->real, l);
}

static int wb_reserved(sqlite3_file *f, int *out)
{
    wb_file *p = (wb_file *)f;

    return p->real->pMethods->xCheckReservedLock(p->real, out);
}

static int wb_fcntl(sqlite3_file *f, int op, void *arg)
{
    wb_file *p = (wb_file *)f;
    int rc = wb_flush(p);

    return rc != SQLITE_OK ? rc
                           : p->real->pMethods->xFileControl(p->real, op, arg);
}

static int wb_sector(sqlite3_file *f)
{
    wb_file *p = (wb_file *)f;

    return p->real->pMethods->xSectorSize(p->real);
}

static int wb_devchar(sqlite3_file *f)
{
    wb_file *p = (wb_file *)f;

    return p->real->pMethods->xDeviceCharacteristics(p->real);
}

/* Version 1: a WAL file has no shared memory or memory map of its own
 * (SQLite asks those of the database file). */
static const sqlite3_io_methods wb_io = {
    .iVersion = 1,
    .xClose = wb_close,
    .xRead = wb_read,
    .xWrite = wb_write,
    .xTruncate = wb_truncate,
    .xSync = wb_sync,
    .xFileSize = wb_size,
    .xLock = wb_lock,
    .xUnlock = wb_unlock,
    .xCheckReservedLock = wb_reserved,
    .xFileControl = wb_fcntl,
    .xSectorSize = wb_sector,
    .xDeviceCharacteristics = wb_devchar,
};

static int wb_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags,
                   int *out)
{
    sqlite3_vfs *r = real_vfs(v);
    wb_file *p = (wb_file *)f;
    int rc;

    if (!(flags & SQLITE_OPEN_WAL))
        return r->xOpen(r, name, f, flags, out);
    memset(p, 0, sizeof(*p));
    p->real = (sqlite3_file *)((char *)f + WB_HDR);
    rc = r->xOpen(r, name, p->real, flags, out);
    if (rc != SQLITE_OK) {
        /* SQLite closes what has methods, even after a failed open */
        if (p->real->pMethods)
            p->real->pMethods->xClose(p->real);
        p->base.pMethods = NULL;
        return rc;
    }
    p->base.pMethods = &wb_io;
    return SQLITE_OK;
}

/* The rest is the default VFS's, called with its own handle. */
static int wb_delete(sqlite3_vfs *v, const char *name, int sync)
{
    return real_vfs(v)->xDelete(real_vfs(v), name, sync);
}

static int wb_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    return real_vfs(v)->xAccess(real_vfs(v), name, flags, out);
}

static int wb_fullpath(sqlite3_vfs *v, const char *name, int n, char *out)
{
    return real_vfs(v)->xFullPathname(real_vfs(v), name, n, out);
}

static void *wb_dlopen(sqlite3_vfs *v, const char *name)
{
    return real_vfs(v)->xDlOpen(real_vfs(v), name);
}

static void wb_dlerror(sqlite3_vfs *v, int n, char *msg)
{
    real_vfs(v)->xDlError(real_vfs(v), n, msg);
}

static void (*wb_dlsym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
    return real_vfs(v)->xDlSym(real_vfs(v), h, sym);
}

static void wb_dlclose(sqlite3_vfs *v, void *h)
{
    real_vfs(v)->xDlClose(real_vfs(v), h);
}

static int wb_random(sqlite3_vfs *v, int n, char *out)
{
    return real_vfs(v)->xRandomness(real_vfs(v), n, out);
}

static int wb_sleep(sqlite3_vfs *v, int us)
{
    return real_vfs(v)->xSleep(real_vfs(v), us);
}

static int wb_time(sqlite3_vfs *v, double *out)
{
    return real_vfs(v)->xCurrentTime(real_vfs(v), out);
}

static int wb_lasterr(sqlite3_vfs *v, int n, char *out)
{
    return real_vfs(v)->xGetLastError(real_vfs(v), n, out);
}

static int wb_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    return real_vfs(v)->xCurrentTimeInt64(real_vfs(v), out);
}

static int wb_setsys(sqlite3_vfs *v, const char *name, sqlite3_syscall_ptr p)
{
    return real_vfs(v)->xSetSystemCall(real_vfs(v), name, p);
}

static sqlite3_syscall_ptr wb_getsys(sqlite3_vfs *v, const char *name)
{
    return real_vfs(v)->xGetSystemCall(real_vfs(v), name);
}

static const char *wb_nextsys(sqlite3_vfs *v, const char *name)
{
    return real_vfs(v)->xNextSystemCall(real_vfs(v), name);
}

int sdb_walbuf_register(void)
{
    sqlite3_vfs *r = sqlite3_vfs_find(NULL);

    if (!r)
        return SQLITE_ERROR;
    g_vfs.iVersion = r->iVersion < 3 ? r->iVersion : 3;
    g_vfs.szOsFile = (int)WB_HDR + r->szOsFile;
    g_vfs.mxPathname = r->mxPathname;
    g_vfs.zName = SDB_WALBUF_VFS;
    g_vfs.pAppData = r;
    g_vfs.xOpen = wb_open;
    g_vfs.xDelete = wb_delete;
    g_vfs.xAccess = wb_access;
    g_vfs.xFullPathname = wb_fullpath;
    g_vfs.xDlOpen = wb_dlopen;
    g_vfs.xDlError = wb_dlerror;
    g_vfs.xDlSym = wb_dlsym;
    g_vfs.xDlClose = wb_dlclose;
    g_vfs.xRandomness = wb_random;
    g_vfs.xSleep = wb_sleep;
    g_vfs.xCurrentTime = wb_time;
    g_vfs.xGetLastError = wb_lasterr;
    if (g_vfs.iVersion >= 2)
        g_vfs.xCurrentTimeInt64 = wb_time64;
    if (g_vfs.iVersion >= 3) {
        g_vfs.xSetSystemCall = wb_setsys;
        g_vfs.xGetSystemCall = wb_getsys;
        g_vfs.xNextSystemCall = wb_nextsys;
    }
    return sqlite3_vfs_register(&g_vfs, 0);
}

void sdb_walbuf_stats(uint64_t *writes, uint64_t *flushes)
{
    *writes = __atomic_load_n(&g_writes, __ATOMIC_RELAXED);
    *flushes = __atomic_load_n(&g_flushes, __ATOMIC_RELAXED);
}
