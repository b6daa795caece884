/*
 * fuzz_sim_perturb.c - libFuzzer target for GPUFL_SIM_PERTURB's parser
 * (src/client/sim_perturb.c).  The input, to the first NUL, is the value.
 *
 * Oracles beyond "does not crash":
 *   - accepted: every item is within its caps (counts, substring length,
 *     factor in [0.01, 100], extra allocation 1 byte to 20 GiB, a pause in
 *     (0, 3600 s]), and the value is at most 255 bytes;
 *   - refused: the result holds no change and the message names
 *     GPUFL_SIM_PERTURB;
 *   - parsing the same value twice gives the same result (no state).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/sim_perturb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_sim_perturb: %s:%d: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char v[512], why[256], why2[256];
    sim_perturb p, q;
    size_t n = size < sizeof v - 1 ? size : sizeof v - 1;
    int rc;

    memcpy(v, data, n);
    v[n] = '\0';
    why[0] = 0;
    rc = sim_perturb_parse(v, &p, why, sizeof why);
    FUZZ_ASSERT(rc == 0 || rc == -1);
    FUZZ_ASSERT(sim_perturb_parse(v, &q, why2, sizeof why2) == rc);
    FUZZ_ASSERT(!memcmp(&p, &q, sizeof p));
    if (rc) {
        FUZZ_ASSERT(strstr(why, "GPUFL_SIM_PERTURB") != NULL);
        FUZZ_ASSERT(!p.n_kernel && !p.n_stall && !p.mem_bytes);
        return 0;
    }
    FUZZ_ASSERT(strlen(v) <= SIM_PERTURB_LEN_MAX);
    FUZZ_ASSERT(p.n_kernel <= SIM_PERTURB_KERNELS_MAX);
    FUZZ_ASSERT(p.n_stall <= SIM_PERTURB_STALLS_MAX);
    FUZZ_ASSERT(p.mem_bytes <= SIM_PERTURB_MEM_MAX);
    for (uint32_t i = 0; i < p.n_kernel; i++) {
        FUZZ_ASSERT(strlen(p.kernel[i].sub) <= SIM_PERTURB_SUB_MAX);
        FUZZ_ASSERT(strstr(v, p.kernel[i].sub) != NULL);
        FUZZ_ASSERT(p.kernel[i].factor >= SIM_PERTURB_FACTOR_MIN &&
                    p.kernel[i].factor <= SIM_PERTURB_FACTOR_MAX);
    }
    for (uint32_t i = 0; i < p.n_stall; i++)
        FUZZ_ASSERT(p.stall[i].ns > 0 &&
                    p.stall[i].ns <= SIM_PERTURB_STALL_MAX_NS);
    return 0;
}
