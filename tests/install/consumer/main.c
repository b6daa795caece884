/* Links against an installed libgpufl and records one scope. */
#include <gpufl/gpufl.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    gpufl_options o;
    gpufl_options_init(&o);
    o.log_dir = argc > 1 ? argv[1] : ".";
    o.engines = "host";
    if (gpufl_init(&o) != GPUFL_OK) {
        fprintf(stderr, "%s\n", gpufl_last_error());
        return 1;
    }
    GFL_SCOPE("installed")
    {
        gpufl_marker("hello from an installed libgpufl");
    }
    printf("%s %s\n", gpufl_version(), gpufl_log_prefix());
    gpufl_shutdown();
    return 0;
}
