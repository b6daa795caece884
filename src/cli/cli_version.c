/*
 * cli_version.c - `gpufl version`: the command's, the library's and the
 * event format's versions.
 */
#include <stdio.h>

#include <gpufl/gpufl.h>

#include "cli_int.h"

int cli_version_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpufl %s (libgpufl %s, event format %d)\n", GPUFL_VERSION_STRING,
           gpufl_version(), GPUFL_FORMAT_VERSION);
    return 0;
}
