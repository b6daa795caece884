/*
 * demangle.c - the readable form of an Itanium C++ ABI name ("_Z6vecaddPKfS0_Pfi"
 * -> "vecadd(float const*, float const*, float*, int)") for display: kernel
 * names in dict lines, stack frames.
 *
 * libgpufl is C and does not link the C++ runtime: __cxa_demangle is taken
 * from the libstdc++ the process already has (every CUDA program does:
 * libcudart is C++), else loaded once with dlopen.  Called from gpufl's own
 * threads only - the collector writing dict lines, the CUPTI flush thread
 * symbolising stacks - never from an application thread: the first call
 * may dlopen, and every call allocates.
 */
#include "client_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len,
                                 int *status);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cxa_demangle_fn demangler;

static void load(void)
{
    void *h;
    demangler = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (demangler)
        return;
    h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (h) /* kept loaded: the pointer must stay valid */
        demangler = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

int client_demangle(const char *name, char *out, size_t cap)
{
    char *d;
    int status = -1;
    size_t n;
    if (!name || name[0] != '_' || name[1] != 'Z' || cap == 0)
        return 0;
    pthread_once(&once, load);
    if (!demangler)
        return 0;
    d = demangler(name, NULL, NULL, &status);
    if (status != 0 || !d) {
        free(d);
        return 0;
    }
    n = strlen(d);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, d, n);
    out[n] = 0;
    free(d);
    return 1;
}
