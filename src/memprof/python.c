/*
 * python.c - CPython frames: recognise a CPython 3.10 to 3.13 in a process
 * (its libpython3.X.so or python3.X executable in /proc/PID/maps), tell
 * the BPF program where its thread states and frames are (struct
 * mp_pyconf), and turn the (code object, instruction) pairs it sends back
 * into "qualname (file.py:LINE)" by reading the process's memory.  The
 * preload interposer compiles this file too: it walks its own thread's
 * frames with the same table (mp_py_walk) and names them in-process.
 *
 * The offsets were read with gdb `ptype/o` from the DWARF of pyenv's
 * 3.10.13, 3.11.7, 3.12.1 and 3.13.0 builds (docs/memprof.md); CPython
 * keeps these structures stable within a minor version.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "memprof_int.h"

/* conf: runtime, rt_main, is_head, ts_next, ts_thread_id, ts_frame,
 * cf_current, fr_code, fr_previous, fr_instr, fr_owner, fr_self, pad */
static const mp_pyver versions[] = {
    { .name = "3.10",
      .conf = { 0, 0x28, 0x8, 8, 176, 24, MP_PY_NOCF, 32, 24, 96, 0, 352, 0 },
      .co_qualname = 0, /* none: co_name and the type of `self` */
      .co_name = 112,
      .co_filename = 104,
      .co_firstlineno = 40,
      .co_linetable = 120, /* PEP 626 (start delta, line delta) pairs */
      .co_code = 0,        /* f_lasti counts code units itself */
      .co_argcount = 16,
      .co_varnames = 72,
      .str_ascii = 48,
      .str_compact = 72,
      .lines310 = 1 },
    { .name = "3.11",
      .conf = { 0, 0x30, 0x10, 8, 152, 56, 8, 32, 48, 56, 69, 0, 0 },
      .co_qualname = 128,
      .co_name = 120,
      .co_filename = 112,
      .co_firstlineno = 72,
      .co_linetable = 136,
      .co_code = 184, /* co_code_adaptive */
      .co_argcount = 56,
      .co_varnames = 96, /* co_localsplusnames */
      .str_ascii = 48,
      .str_compact = 72 },
    { .name = "3.12",
      .conf = { 0, 0x30, 0x48, 8, 136, 56, 0, 0, 8, 56, 70, 0, 0 },
      .co_qualname = 128,
      .co_name = 120,
      .co_filename = 112,
      .co_firstlineno = 68,
      .co_linetable = 136,
      .co_code = 192,
      .co_argcount = 52,
      .co_varnames = 96,
      .str_ascii = 40, /* no wstr since 3.12 */
      .str_compact = 56 },
    { .name = "3.13",
      .conf = { 0, 0x280, 0x1cb0, 8, 152, 72, MP_PY_NOCF, 0, 8, 56, 70, 0, 0 },
      .co_qualname = 128,
      .co_name = 120,
      .co_filename = 112,
      .co_firstlineno = 68,
      .co_linetable = 136,
      .co_code = 200,
      .co_argcount = 52,
      .co_varnames = 96,
      .str_ascii = 40,
      .str_compact = 56,
      .debug_offsets = 0x030d },
};
#define NVERSIONS (sizeof versions / sizeof versions[0])

const mp_pyver *mp_py_version(unsigned idx)
{
    return idx < NVERSIONS ? &versions[idx] : NULL;
}

unsigned mp_py_index(const mp_pyver *v)
{
    return (unsigned)(v - versions);
}

const mp_pyver *mp_py_by_version(const char *version)
{
    for (size_t v = 0; version && v < NVERSIONS; v++) {
        size_t n = strlen(versions[v].name);
        if (!strncmp(version, versions[v].name, n) &&
            (version[n] == '.' || version[n] == ' ' || !version[n]))
            return &versions[v];
    }
    return NULL;
}

int mp_py_skip(const mp_pyver *v, uint64_t code, uint64_t instr)
{
    return !code || (!v->lines310 && (instr >> 56) == MP_PY_OWNED_BY_CSTACK);
}

uint64_t mp_py_key(uint64_t code, uint64_t instr)
{
    return (code * 0x9e3779b97f4a7c15ULL) ^ instr;
}

static int rd(int pid, uint64_t addr, void *out, size_t n);

/* 3.13+: _PyRuntime starts with _Py_DebugOffsets, CPython's own table for
 * out-of-process readers (Include/internal/pycore_runtime.h).  The
 * offsets used here must agree with the running interpreter's. */
int mp_py_offsets_ok(int pid, const mp_pyver *v, uint64_t runtime)
{
    uint64_t d[44]; /* up to code_object.co_code_adaptive */
    const struct mp_pyconf *c = &v->conf;
    if (!v->debug_offsets)
        return 1;
    if (!runtime || rd(pid, runtime, d, sizeof d) || memcmp(d, "xdebugpy", 8) ||
        ((d[1] >> 16) & 0xffff) != v->debug_offsets)
        return 0;
    /* free_threaded; runtime_state.interpreters_head (main follows it) */
    return d[2] == 0 && d[5] + 8 == c->rt_main && d[9] == c->is_head &&
           d[21] == c->ts_next && d[23] == c->ts_frame &&
           d[24] == c->ts_thread_id && d[29] == c->fr_previous &&
           d[30] == c->fr_code && d[31] == c->fr_instr &&
           d[33] == c->fr_owner && d[35] == v->co_filename &&
           d[36] == v->co_name && d[37] == v->co_qualname &&
           d[38] == v->co_linetable && d[39] == v->co_firstlineno &&
           d[40] == v->co_argcount && d[41] == v->co_varnames &&
           d[43] == v->co_code;
}

const mp_pyver *mp_py_detect(int pid, const char *maps, struct mp_pyconf *c)
{
    /* the module holding _PyRuntime: libpython3.X.so*, else python3.X */
    const char *line = maps;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        char buf[4352];
        if (ll >= sizeof buf)
            ll = sizeof buf - 1;
        memcpy(buf, line, ll);
        buf[ll] = 0;
        line = nl ? nl + 1 : NULL;
        unsigned long long a, b, off;
        int pos = 0;
        if (sscanf(buf, "%llx-%llx %*s %llx %*s %*s %n", &a, &b, &off, &pos) <
                3 ||
            pos <= 0 || buf[pos] != '/' || off != 0)
            continue;
        const char *path = buf + pos, *base = strrchr(path, '/') + 1;
        for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
            char lib[32], exe[32];
            snprintf(lib, sizeof lib, "libpython%s.so", versions[v].name);
            snprintf(exe, sizeof exe, "python%s", versions[v].name);
            if (strncmp(base, lib, strlen(lib)) && strcmp(base, exe))
                continue;
            char full[4400];
            uint64_t minva = 0;
            snprintf(full, sizeof full, "/proc/%d/root%s", pid, path);
            uint64_t va = elfsym_lookup(full, "_PyRuntime", &minva);
            if (!va)
                continue;
            *c = versions[v].conf;
            c->runtime = a + va - minva;
            if (!mp_py_offsets_ok(pid, &versions[v], c->runtime)) {
                fprintf(stderr,
                        "gpufl memprof: pid %d: CPython %s's "
                        "_Py_DebugOffsets differ from gpufl's table: no "
                        "Python frames\n",
                        pid, versions[v].name);
                return NULL;
            }
            return &versions[v];
        }
    }
    return NULL;
}

static int rd(int pid, uint64_t addr, void *out, size_t n)
{
    struct iovec l = { out, n }, r = { (void *)(uintptr_t)addr, n };
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* A str object's text (ASCII or latin-1 compact strings) into buf. */
static void py_str(int pid, const mp_pyver *v, uint64_t obj, char *buf,
                   size_t cap)
{
    unsigned char hdr[40];
    buf[0] = 0;
    if (!obj || rd(pid, obj, hdr, sizeof hdr))
        return;
    uint64_t len;
    uint32_t state;
    memcpy(&len, hdr + 16, 8);
    memcpy(&state, hdr + 32, 4);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1,
             ascii = (state >> 6) & 1;
    if (!compact || kind != 1)
        return;
    uint64_t data = obj + (ascii ? v->str_ascii : v->str_compact);
    if (len >= cap)
        len = cap - 1;
    if (rd(pid, data, buf, len))
        len = 0;
    buf[len] = 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
            buf[i] = '?';
}

/* A NUL-terminated C string (a type's tp_name) into buf. */
static void c_str(int pid, uint64_t addr, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    while (addr && n + 1 < cap) {
        char chunk[32];
        size_t want = sizeof chunk;
        /* a read must not cross into an unmapped page */
        uint64_t room = 4096 - ((addr + n) & 4095);
        if (want > room)
            want = (size_t)room;
        if (rd(pid, addr + n, chunk, want))
            break;
        for (size_t i = 0; i < want && n + 1 < cap; i++) {
            if (!chunk[i]) {
                buf[n] = 0;
                return;
            }
            buf[n++] = (unsigned char)chunk[i] < 0x20 ? '?' : chunk[i];
        }
    }
    buf[n] = 0;
}

/* 3.10 line table (PEP 626, Objects/lnotab_notes.txt): (bytecode delta,
 * signed line delta) pairs, -128 = no line; the line of byte offset addr,
 * or -1 */
int64_t mp_py_line_of310(const unsigned char *t, size_t n, int64_t line,
                         uint64_t addr)
{
    uint64_t start = 0, end = 0;
    int64_t cur = -1;
    for (size_t i = 0; i + 1 < n; i += 2) {
        start = end;
        end += t[i];
        int8_t d = (int8_t)t[i + 1];
        if (d == -128) {
            cur = -1;
        } else {
            line += d;
            cur = line;
        }
        if (start < end && addr >= start && addr < end)
            return cur;
    }
    return -1;
}

/* 3.11 location table (Objects/locations.md): the line of code unit idx */
int64_t mp_py_line_of(const unsigned char *t, size_t n, int64_t line,
                      uint64_t idx)
{
    size_t i = 0;
    uint64_t at = 0;
#define VARINT(v)                                                              \
    do {                                                                       \
        unsigned sh = 0;                                                       \
        v = 0;                                                                 \
        while (i < n) {                                                        \
            unsigned char ch = t[i++];                                         \
            v |= (uint64_t)(ch & 63) << sh;                                    \
            sh += 6;                                                           \
            if (!(ch & 64) || sh > 30)                                         \
                break;                                                         \
        }                                                                      \
    } while (0)
    while (i < n) {
        unsigned char b = t[i++];
        unsigned code = (b >> 3) & 15, units = (b & 7) + 1;
        int64_t delta = 0;
        uint64_t v;
        if (code == 15) {
        } else if (code == 14) {
            VARINT(v);
            delta = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
            VARINT(v);
            VARINT(v);
            VARINT(v);
        } else if (code == 13) {
            VARINT(v);
            delta = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
        } else if (code >= 10) {
            delta = code - 10;
            i += 2;
        } else {
            i += 1;
        }
        /* a hostile table cannot overflow: deltas are < 2^32, the
         * line is kept within +-2^40 */
        line += delta;
        if (line > (1LL << 40) || line < -(1LL << 40))
            line = 0;
        if (idx < at + units)
            return line;
        at += units;
    }
#undef VARINT
    return line;
}

/* 3.10: "Class.name" when the first argument is called self and its
 * type is known, else just co_name */
static void name310(int pid, const mp_pyver *v, uint64_t code, uint64_t type,
                    const char *name, char *out, size_t cap)
{
    int32_t argc = 0;
    uint64_t names = 0, first = 0;
    char arg0[8], tn[128];
    snprintf(out, cap, "%s", name);
    if (!type || rd(pid, code + v->co_argcount, &argc, 4) || argc < 1 ||
        rd(pid, code + v->co_varnames, &names, 8) || !names ||
        rd(pid, names + 24, &first, 8)) /* PyTupleObject.ob_item[0] */
        return;
    py_str(pid, v, first, arg0, sizeof arg0);
    uint64_t tp_name = 0;
    if (strcmp(arg0, "self") || rd(pid, type + 24, &tp_name, 8))
        return;
    c_str(pid, tp_name, tn, sizeof tn);
    const char *dot = strrchr(tn, '.'); /* static types: "module.Name" */
    if (tn[0])
        snprintf(out, cap, "%s.%s", dot ? dot + 1 : tn, name);
}

void mp_py_frame_name(int pid, const mp_pyver *v, uint64_t code, uint64_t instr,
                      char *buf, size_t cap)
{
    uint64_t qual = 0, file = 0, ltab = 0;
    int32_t first = 0;
    char q[256], f[512], m[400];
    const char *qn = q;
    if (rd(pid, code + (v->co_qualname ? v->co_qualname : v->co_name), &qual,
           8) ||
        rd(pid, code + v->co_filename, &file, 8) ||
        rd(pid, code + v->co_firstlineno, &first, 4) ||
        rd(pid, code + v->co_linetable, &ltab, 8)) {
        snprintf(buf, cap, "[python 0x%" PRIx64 "]", code);
        return;
    }
    py_str(pid, v, qual, q, sizeof q);
    py_str(pid, v, file, f, sizeof f);
    int64_t line = first;
    uint64_t blen = 0;
    /* bytes object: ob_size at 16, data at 32 */
    int have_tab =
        ltab && !rd(pid, ltab + 16, &blen, 8) && blen && blen < 65536;
    if (v->lines310) {
        uint64_t lasti = instr & 0xfffff;
        if (q[0]) {
            name310(pid, v, code, (instr >> 20) << 3, q, m, sizeof m);
            qn = m;
        }
        if (have_tab && lasti != 0xfffff) {
            unsigned char *t = malloc(blen);
            if (t && !rd(pid, ltab + 32, t, blen)) {
                int64_t l = mp_py_line_of310(t, blen, first, lasti * 2);
                if (l >= 0)
                    line = l;
            }
            free(t);
        }
    } else if (have_tab && (instr &= MP_PY_INSTR_MASK) >= code + v->co_code) {
        unsigned char *t = malloc(blen);
        if (t && !rd(pid, ltab + 32, t, blen))
            line =
                mp_py_line_of(t, blen, first, (instr - code - v->co_code) / 2);
        free(t);
    }
    const char *base = strrchr(f, '/');
    snprintf(buf, cap, "%s (%s:%" PRId64 ")", qn[0] ? qn : "?",
             base ? base + 1 : (f[0] ? f : "?"), line);
}

/* The preload interposer's walk of its own thread's frames: the BPF
 * program's loop (memprof.bpf.c) over plain memory reads. */
int mp_py_walk(const struct mp_pyconf *c, uint64_t tstate, uint64_t *code,
               uint64_t *instr, int max)
{
    const unsigned char *ts = (const void *)(uintptr_t)tstate;
    uint64_t fr;
    int n = 0;
    if (!ts)
        return 0;
    memcpy(&fr, ts + c->ts_frame, 8);
    if (c->cf_current != MP_PY_NOCF && fr)
        memcpy(&fr, (const unsigned char *)(uintptr_t)fr + c->cf_current, 8);
    for (int i = 0; i < max + 8 && fr && n < max; i++) {
        const unsigned char *f = (const void *)(uintptr_t)fr;
        uint64_t co, in;
        memcpy(&co, f + c->fr_code, 8);
        memcpy(&in, f + c->fr_instr, 8);
        if (c->fr_self) {
            uint64_t self, type = 0;
            memcpy(&self, f + c->fr_self, 8);
            if (self)
                memcpy(&type, (const unsigned char *)(uintptr_t)self + 8, 8);
            in = mp_py310_pack(in, type);
        } else {
            in = (in & MP_PY_INSTR_MASK) | (uint64_t)f[c->fr_owner] << 56;
        }
        if (co && (c->fr_self || f[c->fr_owner] != MP_PY_OWNED_BY_CSTACK)) {
            code[n] = co;
            instr[n] = in;
            n++;
        }
        memcpy(&fr, f + c->fr_previous, 8);
    }
    return n;
}
