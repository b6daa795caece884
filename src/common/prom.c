/*
 * prom.c - the Prometheus text exposition writer (see prom.h).
 */
#include "prom.h"

#include <string.h>

void prom_family(gbuf *b, const char *name, const char *type, const char *help)
{
    gbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_escape(gbuf *b, const char *s, size_t n)
{
    size_t run = 0;

    for (size_t i = 0; i < n; i++) {
        const char *e = s[i] == '\\'   ? "\\\\"
                        : s[i] == '"'  ? "\\\""
                        : s[i] == '\n' ? "\\n"
                                       : NULL;
        if (!e)
            continue;
        gbuf_add(b, s + run, i - run);
        gbuf_add(b, e, 2);
        run = i + 1;
    }
    gbuf_add(b, s + run, n - run);
}

void prom_name(gbuf *b, const char *name, const prom_label *l, size_t n)
{
    gbuf_adds(b, name);
    for (size_t i = 0; i < n; i++) {
        const char *v = l[i].value ? l[i].value : "";
        gbuf_addc(b, i ? ',' : '{');
        gbuf_adds(b, l[i].name);
        gbuf_add(b, "=\"", 2);
        prom_escape(b, v, strlen(v));
        gbuf_addc(b, '"');
    }
    if (n)
        gbuf_addc(b, '}');
}

void prom_u64(gbuf *b, const char *name, const prom_label *l, size_t n,
              uint64_t v)
{
    prom_name(b, name, l, n);
    gbuf_addf(b, " %llu\n", (unsigned long long)v);
}

void prom_f64(gbuf *b, const char *name, const prom_label *l, size_t n,
              double v, int decimals)
{
    prom_name(b, name, l, n);
    gbuf_addf(b, " %.*f\n", decimals, v);
}
