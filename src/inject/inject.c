/*
 * inject.c - libgpufl_inject.so, the CUDA injection library behind
 * `gpufl run`: profiling with no change to the program.
 *
 * The CUDA driver, inside the process's first cuInit, dlopens the library
 * named by CUDA_INJECTION64_PATH and calls its InitializeInjection
 * (docs/cupti-internals.md#injection).  We start a gpufl session from
 * the GPUFL_* environment right there, synchronously, as NVIDIA's samples
 * do: CUPTI is subscribed before any context or module exists, and
 * gpufl_init registers the exit flush with atexit from inside cuInit, i.e.
 * after the driver registered its own teardown, so ours runs first
 * (docs/cupti-internals.md#teardown).
 * A program that calls gpufl_init itself keeps its own session (ours then
 * gets GPUFL_EALREADY and does nothing).
 *
 * Nothing runs at load time (no constructor): a library that is merely
 * loaded must not touch CUDA.  Forked children stop capturing (libgpufl's
 * fork handler); exec'd children are injected again by the driver.
 */
#include <pthread.h>

#include <gpufl/gpufl.h>

int InitializeInjection(void) __attribute__((visibility("default")));

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void inject_start(void)
{
    gpufl_options o;
    /* a bad GPUFL_* value keeps its default and is written into the
     * session header; it must not stop the application */
    (void)gpufl_options_init(&o);
    (void)gpufl_init(&o);
}

int InitializeInjection(void)
{
    pthread_once(&once, inject_start);
    return 1; /* "successfully initialized", as NVIDIA's samples return */
}
