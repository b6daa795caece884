/*
 * source_host.c - host CPU, memory and load, and this process's CPU and
 * RSS, read from procfs (src_host_* in source.h).
 *
 * It owns the previous readings that turn procfs's cumulative counters
 * into percentages.  Files are read with open/read into one capped buffer
 * allocated at open, so a sample allocates nothing; numbers are parsed by
 * hand (strtoull, and a fixed-point reader for loadavg) because the host
 * program may have set a locale whose decimal point is not '.'.
 *
 * Not thread-safe: the sampler thread owns a src_host.
 */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"

/* /proc/stat holds a line per CPU and then the (long) interrupt lines; only
 * the CPU lines are used.  256 KiB is ~1,700 CPUs of lines. */
#define HOST_BUF_CAP (256u * 1024u)
#define HOST_PATH_CAP 1024u
#define HOST_STAT_FIELDS 8 /* user nice system idle iowait irq softirq steal */

struct src_host {
    char *root;
    char *buf; /* HOST_BUF_CAP bytes */
    long page_size;
    long clk_tck;
    /* previous /proc/stat aggregate, in jiffies summed over CPUs */
    int have_cpu;
    uint64_t prev_busy, prev_total;
    double last_cpu_pct;
    /* previous utime+stime; the clock is /proc/stat's total when readable */
    int have_proc, prev_proc_stat;
    uint64_t prev_proc, prev_proc_total, prev_proc_ns;
    double last_proc_pct;
};

src_host *src_host_open(const char *proc_root)
{
    src_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->root = strdup(proc_root && *proc_root ? proc_root : "/proc");
    h->buf = malloc(HOST_BUF_CAP);
    if (!h->root || !h->buf) {
        src_host_close(h);
        return NULL;
    }
    h->page_size = sysconf(_SC_PAGESIZE);
    if (h->page_size <= 0)
        h->page_size = 4096;
    h->clk_tck = sysconf(_SC_CLK_TCK);
    if (h->clk_tck <= 0)
        h->clk_tck = 100;
    h->last_cpu_pct = -1;
    h->last_proc_pct = -1;
    return h;
}

void src_host_close(src_host *h)
{
    if (!h)
        return;
    free(h->root);
    free(h->buf);
    free(h);
}

/* Read <root>/<name> into h->buf, NUL-terminated.  A file longer than the
 * cap is cut (only /proc/stat can be, and its tail is not used).  Returns
 * the length, or -1. */
static long host_read(src_host *h, const char *name)
{
    char path[HOST_PATH_CAP];
    size_t len = 0;
    int fd, n;

    n = snprintf(path, sizeof path, "%s/%s", h->root, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return -1;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (len < HOST_BUF_CAP - 1) {
        ssize_t r = read(fd, h->buf + len, HOST_BUF_CAP - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    h->buf[len] = 0;
    return (long)len;
}

/* Next unsigned number at *p (leading blanks skipped); 0 if none. */
static int host_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    char *end;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return 0;
    errno = 0;
    *out = strtoull(s, &end, 10);
    if (errno)
        return 0;
    *p = end;
    return 1;
}

/* "12.34" -> 12.34 without strtod, which follows LC_NUMERIC. */
static int host_fixed(const char *s, double *out)
{
    double v = 0, scale = 1;
    int digits = 0;
    while (*s == ' ')
        s++;
    for (; *s >= '0' && *s <= '9'; s++, digits++)
        v = v * 10 + (*s - '0');
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, digits++)
            v += (*s - '0') * (scale /= 10);
    if (!digits)
        return 0;
    *out = v;
    return 1;
}

/* /proc/stat: the aggregate "cpu" line and the number of "cpuN" lines. */
static int host_stat(src_host *h, uint64_t *busy, uint64_t *total,
                     uint32_t *ncpu)
{
    const char *p = h->buf, *line;
    uint64_t v[HOST_STAT_FIELDS] = { 0 };
    int nv = 0;

    if (host_read(h, "stat") < 0)
        return -1;
    if (strncmp(p, "cpu ", 4) != 0)
        return -1;
    p += 4;
    /* guest and guest_nice (fields 9, 10) are already inside user/nice */
    while (nv < HOST_STAT_FIELDS && host_u64(&p, &v[nv]))
        nv++;
    if (nv < 4)
        return -1;
    *total = 0;
    for (int i = 0; i < nv; i++)
        *total += v[i];
    /* idle and iowait (fields 4, 5) are idle; everything else, steal
     * included, is time the CPU was not available to run our work */
    *busy = *total - v[3] - (nv > 4 ? v[4] : 0);
    *ncpu = 0;
    for (line = strchr(p, '\n'); line; line = strchr(line, '\n')) {
        line++;
        if (strncmp(line, "cpu", 3) != 0)
            break;
        if (line[3] >= '0' && line[3] <= '9')
            (*ncpu)++;
    }
    return 0;
}

/* Value in kB of "Key:   1234 kB" in meminfo, as bytes. */
static int host_meminfo_key(const char *buf, const char *key, uint64_t *out)
{
    size_t klen = strlen(key);
    const char *p = buf;
    while (p && *p) {
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            const char *q = p + klen + 1;
            uint64_t kb;
            if (!host_u64(&q, &kb))
                return 0;
            *out = kb * 1024;
            return 1;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

static int host_meminfo(src_host *h, src_host_sample *out)
{
    uint64_t total, avail, swap_total, swap_free, free_, buffers, cached;
    int rc = 0;
    if (host_read(h, "meminfo") < 0)
        return -1;
    if (!host_meminfo_key(h->buf, "MemTotal", &total))
        return -1;
    out->ram_total = total;
    if (!host_meminfo_key(h->buf, "MemAvailable", &avail)) {
        /* kernels before 3.14: approximate as the kernel's own estimate
         * did before it existed */
        if (!host_meminfo_key(h->buf, "MemFree", &free_) ||
            !host_meminfo_key(h->buf, "Buffers", &buffers) ||
            !host_meminfo_key(h->buf, "Cached", &cached))
            return -1;
        avail = free_ + buffers + cached;
    }
    out->ram_used = avail < total ? total - avail : 0;
    if (host_meminfo_key(h->buf, "SwapTotal", &swap_total) &&
        host_meminfo_key(h->buf, "SwapFree", &swap_free))
        out->swap_used = swap_free < swap_total ? swap_total - swap_free : 0;
    else
        rc = -1;
    return rc;
}

/* utime + stime (fields 14, 15) from <root>/self/stat, in clock ticks. */
static int host_self_stat(src_host *h, uint64_t *ticks)
{
    const char *p;
    uint64_t v = 0, utime = 0, stime = 0;

    if (host_read(h, "self/stat") < 0)
        return -1;
    /* the command name (field 2) may hold spaces and ')' itself */
    p = strrchr(h->buf, ')');
    if (!p)
        return -1;
    p++;
    while (*p == ' ')
        p++;
    /* field 3 is the state letter; 4..13 are numbers (possibly -1) */
    if (!*p)
        return -1;
    p++;
    for (int field = 4; field <= 13; field++) {
        while (*p == ' ')
            p++;
        if (*p == '-')
            p++;
        if (!host_u64(&p, &v))
            return -1;
    }
    if (!host_u64(&p, &utime) || !host_u64(&p, &stime))
        return -1;
    *ticks = utime + stime;
    return 0;
}

static int host_statm(src_host *h, uint64_t *rss)
{
    const char *p = h->buf;
    uint64_t size, resident;
    if (host_read(h, "self/statm") < 0)
        return -1;
    if (!host_u64(&p, &size) || !host_u64(&p, &resident))
        return -1;
    *rss = resident * (uint64_t)h->page_size;
    return 0;
}

static int host_loadavg(src_host *h, double *load1)
{
    if (host_read(h, "loadavg") < 0)
        return -1;
    return host_fixed(h->buf, load1) ? 0 : -1;
}

int src_host_sample_now(src_host *h, src_host_sample *out)
{
    uint64_t busy = 0, total = 0, ticks = 0;
    uint64_t now = clock_mono_ns();
    int stat_ok, err = 0;

    memset(out, 0, sizeof *out);
    out->cpu_pct = -1;
    out->proc_cpu_pct = -1;
    out->load1 = -1;
    if (!h)
        return GPUFL_EINVAL;

    stat_ok = host_stat(h, &busy, &total, &out->ncpu) == 0;
    if (!stat_ok) {
        err = GPUFL_EIO;
    } else if (!h->have_cpu || total < h->prev_total || busy < h->prev_busy) {
        /* first reading, or counters went back (CPU hot-unplug, a
         * virtualised /proc): start a new interval */
        h->last_cpu_pct = -1;
        h->prev_busy = busy;
        h->prev_total = total;
        h->have_cpu = 1;
    } else if (total > h->prev_total) {
        double db = (double)(busy - h->prev_busy);
        double dt = (double)(total - h->prev_total);
        h->last_cpu_pct = db >= dt ? 100.0 : 100.0 * db / dt;
        h->prev_busy = busy;
        h->prev_total = total;
    }
    /* else no jiffy has passed: report the previous interval again */
    out->cpu_pct = h->last_cpu_pct;

    if (host_meminfo(h, out))
        err = GPUFL_EIO;
    if (host_loadavg(h, &out->load1))
        err = GPUFL_EIO;
    if (host_statm(h, &out->proc_rss))
        err = GPUFL_EIO;

    if (host_self_stat(h, &ticks)) {
        err = GPUFL_EIO;
    } else if (!h->have_proc || ticks < h->prev_proc ||
               (stat_ok && h->prev_proc_stat && total < h->prev_proc_total)) {
        h->last_proc_pct = -1;
        h->prev_proc = ticks;
        h->prev_proc_total = total;
        h->prev_proc_stat = stat_ok;
        h->prev_proc_ns = now;
        h->have_proc = 1;
    } else {
        /* The interval is measured on /proc/stat's clock (total jiffies of
         * all CPUs / ncpu) when both readings have it: the same clock as
         * the tick counts, so scheduling delay between the reads of the two
         * files does not skew the ratio.  Otherwise wall time. */
        double interval = 0;
        if (stat_ok && h->prev_proc_stat && out->ncpu > 0)
            interval = (double)(total - h->prev_proc_total) / out->ncpu;
        else if (now > h->prev_proc_ns)
            interval =
                (double)(now - h->prev_proc_ns) * (double)h->clk_tck / 1e9;
        if (interval > 0) {
            h->last_proc_pct =
                100.0 * (double)(ticks - h->prev_proc) / interval;
            h->prev_proc = ticks;
            h->prev_proc_total = total;
            h->prev_proc_stat = stat_ok;
            h->prev_proc_ns = now;
        }
        /* else no time has passed: report the previous interval again */
    }
    out->proc_cpu_pct = h->last_proc_pct;
    return err;
}
