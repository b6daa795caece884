/*
 * sim_perturb.c - the parser of GPUFL_SIM_PERTURB (sim_perturb.h): a comma
 * list of kernel=SUBSTRING:xFACTOR[@STEP], mem=+BYTES and
 * stall=SECONDS@STEP.  Strict, as every option value: a perturbation that
 * is silently not applied would make a demo or a test show nothing and
 * pass for the wrong reason.
 */
#include "sim_perturb.h"

#include <stdio.h>
#include <string.h>

#include "common/num.h"
#include "common/opt.h"

/* The item being parsed, for messages. */
typedef struct item {
    const char *s;
    size_t len;
} item;

static int fail(char *why, size_t cap, const item *it, const char *what)
{
    snprintf(why, cap, "GPUFL_SIM_PERTURB item \"%.*s\": %s",
             (int)(it->len > 80 ? 80 : it->len), it->s, what);
    return -1;
}

/* A decimal ("1.25") as a double; *end past it. */
static int dec_parse(const char *s, double *out, const char **end)
{
    num_dec d;
    double f = 1;
    if (num_dec_parse(s, &d, end))
        return -1;
    for (unsigned i = 0; i < d.nfrac; i++)
        f *= 10;
    *out = (double)d.whole + (double)d.frac / f;
    return 0;
}

/* "@STEP" at s, to the end of the item (NUL-terminated copy). */
static int step_parse(const char *s, uint64_t *step)
{
    return *s != '@' || num_u64(s + 1, step) ? -1 : 0;
}

static int kernel_item(const char *v, sim_perturb *p, const item *it, char *why,
                       size_t cap)
{
    const char *colon = strrchr(v, ':'), *end;
    sim_perturb_kernel *k;
    if (p->n_kernel >= SIM_PERTURB_KERNELS_MAX)
        return fail(why, cap, it, "at most 8 kernel= items");
    if (!colon || colon[1] != 'x')
        return fail(why, cap, it,
                    "wants kernel=SUBSTRING:xFACTOR[@STEP], e.g. "
                    "kernel=gemm:x1.2@10");
    if ((size_t)(colon - v) > SIM_PERTURB_SUB_MAX)
        return fail(why, cap, it, "the substring is longer than 63 bytes");
    k = &p->kernel[p->n_kernel];
    memcpy(k->sub, v, (size_t)(colon - v));
    k->sub[colon - v] = 0;
    if (dec_parse(colon + 2, &k->factor, &end))
        return fail(why, cap, it,
                    "the factor after 'x' must be a decimal number "
                    "(\"x1.2\")");
    if (!(k->factor >= SIM_PERTURB_FACTOR_MIN) ||
        k->factor > SIM_PERTURB_FACTOR_MAX)
        return fail(why, cap, it, "the factor must be from 0.01 to 100");
    if (*end && step_parse(end, &k->from_step))
        return fail(why, cap, it,
                    "after the factor comes nothing or @STEP (a step number "
                    "from 0)");
    p->n_kernel++;
    return 0;
}

static int mem_item(const char *v, sim_perturb *p, const item *it, char *why,
                    size_t cap)
{
    uint64_t b;
    if (p->mem_bytes)
        return fail(why, cap, it, "mem= is given twice");
    if (*v != '+' || opt_parse_size(v + 1, &b))
        return fail(why, cap, it,
                    "wants mem=+BYTES, e.g. mem=+2GiB (k, M, G with an "
                    "optional i and B)");
    if (!b || b > SIM_PERTURB_MEM_MAX)
        return fail(why, cap, it,
                    "the extra allocation must be from 1 byte to 20GiB (the "
                    "simulated GPU has 80 GB, 38 GiB of it in use)");
    p->mem_bytes = b;
    return 0;
}

static int stall_item(const char *v, sim_perturb *p, const item *it, char *why,
                      size_t cap)
{
    num_dec d;
    const char *end;
    sim_perturb_stall *st;
    if (p->n_stall >= SIM_PERTURB_STALLS_MAX)
        return fail(why, cap, it, "at most 8 stall= items");
    st = &p->stall[p->n_stall];
    if (num_dec_parse(v, &d, &end) ||
        num_dec_scale(&d, 1000000000ull, 1, &st->ns) ||
        step_parse(end, &st->step))
        return fail(why, cap, it,
                    "wants stall=SECONDS@STEP, e.g. stall=1.5@20 (a "
                    "decimal number of seconds, a step number from 0)");
    if (!st->ns || st->ns > SIM_PERTURB_STALL_MAX_NS)
        return fail(why, cap, it,
                    "the pause must be above 0 and at most 3600 seconds");
    p->n_stall++;
    return 0;
}

int sim_perturb_parse(const char *s, sim_perturb *p, char *why, size_t cap)
{
    char buf[SIM_PERTURB_LEN_MAX + 1];
    int rc = 0;

    memset(p, 0, sizeof *p);
    if (!s || !*s)
        return 0;
    if (strlen(s) > SIM_PERTURB_LEN_MAX) {
        snprintf(why, cap, "GPUFL_SIM_PERTURB is %zu bytes; at most %d",
                 strlen(s), SIM_PERTURB_LEN_MAX);
        return -1;
    }
    while (!rc) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        item it = { s, n };
        /* spaces around an item are not part of it */
        while (it.len && it.s[0] == ' ') {
            it.s++;
            it.len--;
        }
        while (it.len && it.s[it.len - 1] == ' ')
            it.len--;
        memcpy(buf, it.s, it.len);
        buf[it.len] = 0;
        if (!it.len)
            rc = fail(why, cap, &it,
                      "is empty (items are separated by single commas)");
        else if (!strncmp(buf, "kernel=", 7))
            rc = kernel_item(buf + 7, p, &it, why, cap);
        else if (!strncmp(buf, "mem=", 4))
            rc = mem_item(buf + 4, p, &it, why, cap);
        else if (!strncmp(buf, "stall=", 6))
            rc = stall_item(buf + 6, p, &it, why, cap);
        else
            rc = fail(why, cap, &it,
                      "unknown; items are kernel=SUBSTRING:xFACTOR[@STEP], "
                      "mem=+BYTES and stall=SECONDS@STEP");
        if (!e)
            break;
        s = e + 1;
    }
    if (rc)
        memset(p, 0, sizeof *p);
    return rc;
}
