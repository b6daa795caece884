/*
 * bench_e2e_producer.c - records kernels through libgpufl at a fixed rate,
 * for bench_e2e.py: `bench_e2e_producer RATE SECONDS` (events/s, s).
 * Timestamps are the real clock, so the driver can measure how far behind
 * the server's stored data is.  Paced in 1 ms slices.
 */
#include <gpufl/gpufl.h>
#include <gpufl/record.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    static const char *const kn[] = { "gemm_bf16_128x128", "softmax_fwd",
                                      "layernorm_fwd", "attention_fwd" };
    uint32_t names[4];
    double rate;
    uint64_t t0, end, done = 0;

    if (argc != 3 || atof(argv[1]) <= 0 || atof(argv[2]) <= 0) {
        fprintf(stderr, "usage: bench_e2e_producer RATE SECONDS\n");
        return 2;
    }
    rate = atof(argv[1]);
    if (gpufl_init(NULL) != GPUFL_OK) {
        fprintf(stderr, "bench_e2e_producer: gpufl_init failed\n");
        return 1;
    }
    for (int i = 0; i < 4; i++)
        names[i] = gpufl_intern(kn[i]);
    t0 = gpufl_now_ns();
    end = t0 + (uint64_t)(atof(argv[2]) * 1e9);
    for (;;) {
        uint64_t now = gpufl_now_ns();
        uint64_t due = (uint64_t)((double)(now - t0) * rate / 1e9);
        if (now >= end)
            break;
        for (; done < due; done++) {
            gpufl_kernel k;
            memset(&k, 0, sizeof k);
            k.sz = sizeof k;
            k.name_id = names[done % 4];
            k.stream = 7;
            k.corr = (uint32_t)done + 1;
            k.grid[0] = 108;
            k.grid[1] = k.grid[2] = 1;
            k.block[0] = 256;
            k.block[1] = k.block[2] = 1;
            k.regs = 64;
            k.start_ns = now;
            k.end_ns = now + 20000 + done % 1000;
            k.api_enter_ns = now - 3000;
            k.api_exit_ns = now - 1000;
            gpufl_record_kernel(&k);
        }
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    gpufl_shutdown();
    printf("%llu\n", (unsigned long long)done);
    return 0;
}
