/*
 * train.c - an example program that records a training run with libgpufl.
 *
 * With no GPU (or GPUFL_ENGINES=sim, the default here) the simulated GPU
 * plays a transformer training loop on its own thread; this program adds
 * its own scopes, markers and a counter, as a real trainer would around
 * its CUDA work.
 *
 *   example_train [--steps N] [--log-dir DIR] [--speed X] [--engines LIST]
 *
 * Writes DIR/<prefix>.{device,scope,system}.log and prints the prefix.
 */
#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(void)
{
    fprintf(stderr,
            "usage: example_train [--steps N] [--log-dir DIR] [--speed X] "
            "[--engines LIST]\n"
            "  --steps N      simulated training steps (default 200)\n"
            "  --log-dir DIR  where the logs go (default ./gpufl-logs)\n"
            "  --speed X      run the simulated clock X times faster "
            "(default 1)\n"
            "  --engines LIST gpufl engines (default sim,host; see "
            "docs/client.md)\n");
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    gpufl_options o;
    gpufl_counter *seen;
    unsigned long steps = 200;
    int rc;

    gpufl_options_init(&o);
    o.app = "example_train";
    o.log_dir = "./gpufl-logs";
    if (!getenv("GPUFL_ENGINES"))
        o.engines = "sim,host";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--steps") && v) {
            steps = strtoul(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--log-dir") && v) {
            o.log_dir = v;
            i++;
        } else if (!strcmp(a, "--speed") && v) {
            o.sim_speed = strtod(v, NULL);
            i++;
        } else if (!strcmp(a, "--engines") && v) {
            o.engines = v;
            i++;
        } else {
            usage();
            return !strcmp(a, "--help") || !strcmp(a, "-h") ? 0 : 2;
        }
    }
    o.sim_steps = (uint32_t)steps;

    rc = gpufl_init(&o);
    if (rc) {
        fprintf(stderr, "example_train: gpufl_init: %s: %s\n",
                gpufl_strerror(rc), gpufl_last_error());
        return 1;
    }
    printf("session %s\nlogs    %s.{device,scope,system}.log\n",
           gpufl_session_id(), gpufl_log_prefix());

    seen = gpufl_counter_get("samples_seen");
    GFL_SCOPE("setup")
    {
        gpufl_marker("loading dataset shards");
        sleep_ms(20);
    }
    GFL_SCOPE("host_side")
    {
        /* the simulated GPU trains on its own thread; the host thread
         * does bookkeeping until the steps are done */
        for (int i = 0; i < 5; i++) {
            GFL_SCOPE("checkpoint_poll")
            {
                gpufl_counter_add(seen, 8 * 1024);
                sleep_ms(10);
            }
        }
    }
    gpufl_marker("training finished");
    rc = gpufl_flush(600000); /* waits for the simulated steps to finish */
    gpufl_shutdown();
    if (rc) {
        fprintf(stderr, "example_train: flush: %s\n", gpufl_strerror(rc));
        return 1;
    }
    printf("done: %lu simulated steps\n", steps);
    return 0;
}
