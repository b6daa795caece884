// scopes.cpp - libgpufl from C++17: gpufl::scope (an RAII object) and
// GFL_SCOPE (a block); early return and exceptions close scopes too.  Also
// proves the public headers compile as C++17.
#include <gpufl/gpufl.h>
#include <gpufl/record.h>

#include <cstdio>
#include <stdexcept>

static int work(int i)
{
    gpufl::scope s("work");
    if (i % 3 == 0)
        return i; // the scope still ends
    GFL_SCOPE("inner")
    {
        if (i % 5 == 0)
            throw std::runtime_error("boom"); // and here too
    }
    return -i;
}

int main(int argc, char **argv)
{
    gpufl_options o;
    gpufl_options_init(&o);
    o.app = "example_scopes_cxx";
    o.log_dir = argc > 1 ? argv[1] : "./gpufl-logs";
    o.engines = "host";
    if (int rc = gpufl_init(&o)) {
        std::fprintf(stderr, "gpufl_init: %s: %s\n", gpufl_strerror(rc),
                     gpufl_last_error());
        return 1;
    }
    int sum = 0;
    for (int i = 1; i <= 30; i++) {
        try {
            sum += work(i);
        } catch (const std::exception &) {
            gpufl_marker("caught");
        }
    }
    std::printf("%s %d\n", gpufl_log_prefix(), sum);
    gpufl_shutdown();
    return 0;
}
