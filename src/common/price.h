/*
 * price.h - what one GPU of a model costs per hour: the MODEL=PRICE items
 * of gpufl-server's and gpufl idle's --price (docs/server.md "GPU waste",
 * docs/idle.md "Cost"), and the price of a model among them.
 */
#ifndef GPUFL_COMMON_PRICE_H
#define GPUFL_COMMON_PRICE_H

#include <stddef.h>

#define PRICE_MODEL_MAX 128

typedef struct gpu_price {
    char model[PRICE_MODEL_MAX]; /* "*": any model without its own price */
    double per_hour;
} gpu_price;

/* "MODEL=PRICE" into *out: the last '=' splits (a model name may hold
 * one), the price a finite number from 0 to 1e9.  0, or -1 with why in
 * err (naming the item as given after flag). */
int price_parse(const char *spec, const char *flag, gpu_price *out, char *err,
                size_t cap);

/* The price of model among p[0..n): its own, else "*"'s, else NULL. */
const gpu_price *price_find(const gpu_price *p, size_t n, const char *model);

#endif
