/*
 * job.c - which job and rank this process is: GPUFL_JOB / GPUFL_RANK /
 * GPUFL_WORLD_SIZE / GPUFL_LOCAL_RANK (or the same gpufl_options fields
 * set in code), filled in from what the launcher set (torchelastic,
 * Slurm, Open MPI, PMI), for the session line (docs/client.md#jobs-and-ranks).
 *
 * The GPUFL_* variables are parsed by the option engine with the others
 * (options.c); here only the launchers' variables are read, strictly (one
 * spelling of one number), since a rank misread from a stray variable
 * would put the session into the wrong lane of a job without a word.
 */
#include "client_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/num.h"

/* What one launcher sets.  `present` says the process runs under it; a
 * NULL job means the launcher gives no job id. */
typedef struct launcher {
    const char *name;
    const char *present, *job, *rank, *size, *local;
} launcher;

/* The order is the precedence: torchrun inside a Slurm allocation sets
 * both, and its ranks are the ones the program's collectives use. */
static const launcher launchers[] = {
    { "torchelastic", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RUN_ID", "RANK",
      "WORLD_SIZE", "LOCAL_RANK" },
    { "slurm", "SLURM_JOB_ID", "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS",
      "SLURM_LOCALID" },
    { "ompi", "OMPI_COMM_WORLD_RANK", "OMPI_MCA_ess_base_jobid",
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK" },
    { "pmi", "PMI_RANK", NULL, "PMI_RANK", "PMI_SIZE", NULL },
};

#define JOB_LOST "the job and rank are not recorded"

static const char *env_set(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    return v && *v ? v : NULL;
}

/* Keep the first problem as the session line's "warning" (one message is
 * kept, as for the GPUFL_* values), which gpufl_init logs; the rest are
 * logged here. */
static void job_warn(int *warned, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void job_warn(int *warned, const char *fmt, ...)
{
    char msg[sizeof g_client.env_warning];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!*warned && !g_client.env_warning[0]) {
        client_env_warning(msg);
    } else if (!*warned && !strstr(g_client.env_warning, msg) &&
               strlen(g_client.env_warning) + 2 + strlen(msg) <
                   sizeof g_client.env_warning) {
        /* after a bad GPUFL_* value's message: both are kept */
        char both[2 * sizeof g_client.env_warning];
        snprintf(both, sizeof both, "%s; %s", g_client.env_warning, msg);
        client_env_warning(both);
    } else if (!strstr(g_client.env_warning, msg)) {
        client_log(GPUFL_LOG_WARN, "%s", msg);
    }
    *warned = 1;
}

/* A launcher's number: -1 when unset, -2 (and a warning saying what is
 * then not recorded) when it is not one spelling of a number below 2^31. */
static int64_t launcher_num(const char *var, const char *lost, int *warned)
{
    const char *v = env_set(var);
    uint64_t u;
    if (!v)
        return -1;
    if (num_u64(v, &u) || u > INT32_MAX) {
        job_warn(warned,
                 "%s=\"%.60s\" is not a rank or size (digits, below 2^31); "
                 "%s",
                 var, v, lost);
        return -2;
    }
    return (int64_t)u;
}

/* A job id as it goes into the session line: like the app name, only
 * [A-Za-z0-9._-], others become '_'.  0, or -1 when it is too long
 * (cutting it could make two jobs one). */
static int job_id_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        return -1;
    memcpy(dst, src, n + 1);
    client_name_sanitize(dst);
    return 0;
}

/* Slurm's job id of a step ("1234.0", as sacct writes it): the ranks of
 * one srun are one job; two sruns in one allocation are two. */
static int slurm_job(char *dst, size_t cap)
{
    const char *j = env_set("SLURM_JOB_ID"), *st = env_set("SLURM_STEP_ID");
    char both[256];
    if (!st)
        return job_id_copy(dst, cap, j);
    if ((size_t)snprintf(both, sizeof both, "%s.%s", j, st) >= sizeof both)
        return -1;
    return job_id_copy(dst, cap, both);
}

void client_job_resolve(const gpufl_options *o, client_cfg *cfg)
{
    const launcher *l = NULL;
    const char *job = o->job && *o->job ? o->job : NULL;
    const char *src = "gpufl";
    int64_t rank = o->rank, size = o->world_size, local = o->local_rank;
    int warned = 0, bad = 0;

    cfg->job[0] = 0;
    cfg->rank = cfg->world_size = cfg->local_rank = -1;
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++)
        if (env_set(launchers[i].present)) {
            l = &launchers[i];
            break;
        }
    /* each of the four: what gpufl was told, else the launcher's */
    if (l && rank < 0)
        bad |= (rank = launcher_num(l->rank, JOB_LOST, &warned)) == -2;
    if (l && size < 0)
        bad |= (size = launcher_num(l->size, JOB_LOST, &warned)) == -2;
    /* a wrong local rank does not make the rank wrong */
    if (l && local < 0 &&
        (local = launcher_num(l->local, "the local rank is not recorded",
                              &warned)) == -2)
        local = -1;
    if (!job && l && env_set(l->job)) {
        const char *v = env_set(l->job);
        /* torchrun without --rdzv-id names every run "none": grouping
         * all of them into one job would be wrong */
        if (strcmp(v, "none")) {
            job = v;
            src = l->name;
        }
    }
    if (!job) {
        if (o->rank >= 0 || o->world_size >= 0 || o->local_rank >= 0)
            job_warn(&warned,
                     "%s is set but no job id is known (GPUFL_JOB or a "
                     "launcher's); the session has no job",
                     o->rank >= 0         ? "GPUFL_RANK"
                     : o->world_size >= 0 ? "GPUFL_WORLD_SIZE"
                                          : "GPUFL_LOCAL_RANK");
        else if (l && rank >= 0)
            client_log(GPUFL_LOG_INFO,
                       "rank %lld from %s but no job id: set GPUFL_JOB to "
                       "record the job",
                       (long long)rank, l->name);
        return;
    }
    if (bad)
        return;
    if (!l && rank < 0 && size < 0) {
        /* GPUFL_JOB alone, no launcher: a job of this one process */
        rank = 0;
        size = 1;
    }
    if (rank < 0 || size < 0) {
        job_warn(&warned,
                 "job \"%.60s\": %s is not known (set GPUFL_RANK and "
                 "GPUFL_WORLD_SIZE); the job and rank are not recorded",
                 job, rank < 0 ? "the rank" : "the world size");
        return;
    }
    if (size == 0 || rank >= size) {
        char r[48];
        snprintf(r, sizeof r, "%lld of %lld", (long long)rank, (long long)size);
        job_warn(&warned,
                 "job \"%.60s\": rank %s is not a rank of the world; the "
                 "job and rank are not recorded",
                 job, r);
        return;
    }
    if (!strcmp(src, "slurm") ? slurm_job(cfg->job, sizeof cfg->job)
                              : job_id_copy(cfg->job, sizeof cfg->job, job)) {
        cfg->job[0] = 0;
        job_warn(&warned,
                 "job id \"%.60s...\" is longer than 127 bytes; the job "
                 "and rank are not recorded",
                 job);
        return;
    }
    if (local >= size) {
        char r[48];
        snprintf(r, sizeof r, "%lld of %lld", (long long)local,
                 (long long)size);
        job_warn(&warned,
                 "job \"%.60s\": local rank %s is not in the "
                 "world; the local rank is not recorded",
                 job, r);
        local = -1;
    }
    cfg->rank = (int32_t)rank;
    cfg->world_size = (int32_t)size;
    cfg->local_rank = (int32_t)local;
    snprintf(cfg->job_source, sizeof cfg->job_source, "%s", src);
}
