/*
 * test_cupti_demangle.c - client_demangle (src/client/demangle.c) on kernel
 * names that nvcc 13 really produces.  The names were taken from an object
 * compiled here (`nvcc -c -arch=sm_86`; the device code's .text.<name>
 * sections and the host stubs carry them) from:
 *
 *   namespace gpufl { namespace test {
 *   template <typename T, int N> __global__ void scale(T *, T, int);
 *   struct Pair { float a; int b; };
 *   __global__ void reduce(const Pair *, float *, unsigned); } }
 *   namespace { __global__ void anon_kernel(double *); }
 *   __global__ void vecadd(const float *, const float *, float *, int);
 *   extern "C" __global__ void plain_c(int *);
 *
 * The program is C and does not link libstdc++: the demangler is loaded
 * at run time, as in a C application.
 */
#include "client/client_int.h"

#include <string.h>

#include "test.h"

static void check(const char *mangled, const char *want)
{
    char out[512];
    int ok = client_demangle(mangled, out, sizeof out);
    CHECK(ok == (want != NULL));
    if (ok && want && strcmp(out, want) != 0) {
        printf("  %s -> \"%s\", want \"%s\"\n", mangled, out, want);
        CHECK(0);
    }
}

static void test_nvcc_names(void)
{
    check("_Z6vecaddPKfS0_Pfi",
          "vecadd(float const*, float const*, float*, int)");
    check("_ZN5gpufl4test6reduceEPKNS0_4PairEPfj",
          "gpufl::test::reduce(gpufl::test::Pair const*, float*, unsigned "
          "int)");
    check("_ZN5gpufl4test5scaleIfLi4EEEvPT_S2_i",
          "void gpufl::test::scale<float, 4>(float*, float, int)");
    check("_ZN5gpufl4test5scaleIdLi2EEEvPT_S2_i",
          "void gpufl::test::scale<double, 2>(double*, double, int)");
    check("_ZN36_GLOBAL__N__932ef5e0_4_k_cu_081f082111anon_kernelEPd",
          "(anonymous namespace)::anon_kernel(double*)");
}

static void test_not_mangled(void)
{
    char out[64] = "x";
    check("plain_c", NULL); /* extern "C": nothing to do */
    check("_Z", NULL);
    check("_Zgarbage(", NULL); /* invalid: not written */
    check("", NULL);
    CHECK(!client_demangle(NULL, out, sizeof out));
    CHECK(!client_demangle("_Z6vecaddPKfS0_Pfi", out, 0));
}

static void test_cut(void)
{
    char out[8];
    REQUIRE(client_demangle("_Z6vecaddPKfS0_Pfi", out, sizeof out));
    CHECK(strcmp(out, "vecadd(") == 0);
}

int main(void)
{
    RUN(test_nvcc_names);
    RUN(test_not_mangled);
    RUN(test_cut);
    TEST_DONE();
}
