/*
 * prog_attach_static.c - a statically linked program (no C library
 * mapped, no dlopen to call) that gpufl attach must refuse
 * (tests/attach/test_attach.py).  Prints "pid N", then sleeps SECONDS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int secs = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 30;
    printf("pid %ld\n", (long)getpid());
    fflush(stdout);
    while (secs-- > 0)
        sleep(1);
    return 0;
}
