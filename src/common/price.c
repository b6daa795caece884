/*
 * price.c - MODEL=PRICE items and their look-up (price.h).
 */
#include "price.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int price_parse(const char *spec, const char *flag, gpu_price *out, char *err,
                size_t cap)
{
    const char *eq = strrchr(spec, '=');
    char *end = NULL;
    double d;

    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof(out->model)) {
        snprintf(err, cap,
                 "%s '%.200s': MODEL=PRICE (a GPU model, or *, and its price "
                 "per GPU-hour)",
                 flag, spec);
        return -1;
    }
    d = strtod(eq + 1, &end);
    /* !(d >= 0) refuses NaN too */
    if (end == eq + 1 || *end || !(d >= 0) || d > 1e9) {
        snprintf(err, cap,
                 "%s '%.200s': the price must be a number from 0 to 1e9", flag,
                 spec);
        return -1;
    }
    memcpy(out->model, spec, (size_t)(eq - spec));
    out->model[eq - spec] = '\0';
    out->per_hour = d;
    return 0;
}

const gpu_price *price_find(const gpu_price *p, size_t n, const char *model)
{
    const gpu_price *any = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(p[i].model, model))
            return &p[i];
        if (!strcmp(p[i].model, "*"))
            any = &p[i];
    }
    return any;
}
