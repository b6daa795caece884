// test_scope_macros.cpp - the scope macros compiled as C++ (an RAII
// guard instead of the cleanup attribute), plus gpufl::scope and
// exceptions.  The C tests run here too: test_scope_macros.c is included.
#include <stdexcept>

static void test_cxx();
#include "test_scope_macros.c"

static int throws_through(int x)
{
    GPUFL_SCOPE_AUTO("throws");
    gpufl::scope s("and_object");
    CHECK(s.token() != 0);
    if (x)
        throw std::runtime_error("boom");
    return x;
}

static void test_cxx()
{
    int caught = 0;
    for (int i = 0; i < 3; i++) {
        try {
            throws_through(i);
        } catch (const std::exception &) {
            caught++;
        }
        CHECK(open_scope() == 0); // the exception ended both scopes
    }
    CHECK(caught == 2);
    {
        gpufl::scope a("a");
        CHECK(open_scope() == a.token());
    }
    CHECK(open_scope() == 0);
}
