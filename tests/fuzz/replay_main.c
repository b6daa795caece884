/*
 * replay_main.c - runs a libFuzzer target's corpus as an ordinary test.
 *
 * Linked with a fuzz target instead of libFuzzer (so it builds with gcc):
 * feeds every regular file of the directories and files named on the
 * command line to LLVMFuzzerTestOneInput(), each in a buffer of exactly its
 * size so that sanitizers catch any read past the end.  A failing oracle
 * aborts; files that cannot be read count as failures.  Prints
 * "N passed, M failed" like the unit tests; exit 0 only if all passed and
 * there was at least one input.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Inputs larger than this are an error in the corpus, not a test. */
#define REPLAY_MAX_INPUT (16u << 20)
#define REPLAY_MAX_PATH 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads and runs one file; returns 0 on success. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    uint8_t *buf = NULL;
    size_t n;
    int err = 1;

    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0 ||
        (uint64_t)st.st_size > REPLAY_MAX_INPUT) {
        fprintf(stderr, "replay: %s: unreadable or over %u bytes\n", path,
                REPLAY_MAX_INPUT);
        goto out;
    }
    n = (size_t)st.st_size;
    /* malloc(0) may return NULL; an empty input is still an input */
    buf = malloc(n ? n : 1);
    if (!buf || fread(buf, 1, n, f) != n) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        goto out;
    }
    LLVMFuzzerTestOneInput(buf, n);
    err = 0;
out:
    free(buf);
    fclose(f);
    return err;
}

/* Runs every regular file directly in dir (sorted, for a stable order). */
static void replay_dir(const char *dir, int *pass, int *fail)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);

    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", dir);
        (*fail)++;
        return;
    }
    for (int i = 0; i < n; i++) {
        char path[REPLAY_MAX_PATH];
        struct stat st;
        int len;

        if (ents[i]->d_name[0] == '.')
            goto next;
        len = snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
        if (len < 0 || (size_t)len >= sizeof(path)) {
            fprintf(stderr, "replay: path too long in %s\n", dir);
            (*fail)++;
            goto next;
        }
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            goto next;
        if (replay_file(path))
            (*fail)++;
        else
            (*pass)++;
    next:
        free(ents[i]);
    }
    free(ents);
}

int main(int argc, char **argv)
{
    int pass = 0, fail = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            fail++;
        } else if (S_ISDIR(st.st_mode)) {
            replay_dir(argv[i], &pass, &fail);
        } else if (replay_file(argv[i])) {
            fail++;
        } else {
            pass++;
        }
    }
    printf("%d passed, %d failed\n", pass, fail);
    return fail || pass == 0 ? 1 : 0;
}
