/*
 * opt_docs_client.c - prints the Markdown table of libgpufl's GPUFL_*
 * variables (src/client/options.c's env_table) for docs/client.md, as the
 * programs' --help-markdown does for theirs (check_opt_docs.py).  The
 * library itself never prints, so the table is printed from here.
 */
#include <stdio.h>

#include "client/client_int.h"
#include "common/opt.h"

int main(void)
{
    char why[256];

    if (opt_table_check(&client_env_prog, why, sizeof why)) {
        fprintf(stderr, "opt_docs_client: %s\n", why);
        return 1;
    }
    opt_markdown(&client_env_prog, stdout);
    return 0;
}
