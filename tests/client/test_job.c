/*
 * test_job.c - which job and rank a session records (src/client/job.c:
 * GPUFL_JOB/RANK/WORLD_SIZE/LOCAL_RANK, then torchelastic, Slurm, Open
 * MPI, PMI), and the parser of GPUFL_SIM_PERTURB (sim_perturb.c).
 */
#include <gpufl/gpufl.h>
#include <stdlib.h>

#include "client/client_int.h"
#include "test.h"

static const char *const job_vars[] = {
    "GPUFL_JOB",
    "GPUFL_RANK",
    "GPUFL_WORLD_SIZE",
    "GPUFL_LOCAL_RANK",
    "GPUFL_STEP_SCOPE",
    "GPUFL_SIM_PERTURB",
    "TORCHELASTIC_RUN_ID",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_MCA_ess_base_jobid",
    "PMI_RANK",
    "PMI_SIZE",
};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof job_vars / sizeof job_vars[0]; i++)
        unsetenv(job_vars[i]);
}

/* The environment is the only input: options from it, then resolved. */
static int resolve(client_cfg *c)
{
    gpufl_options o;
    char err[256];
    gpufl_options_init(&o);
    return client_cfg_resolve(&o, c, err, sizeof err);
}

static void test_none(void)
{
    client_cfg c;
    clear_env();
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
    CHECK(c.rank == -1 && c.world_size == -1 && c.local_rank == -1);
    CHECK_STR(c.step_scope, "");
    CHECK_STR(c.sim_perturb_str, "");
}

static void test_gpufl_vars(void)
{
    client_cfg c;
    clear_env();
    setenv("GPUFL_JOB", "nightly run/7", 1);
    setenv("GPUFL_RANK", "3", 1);
    setenv("GPUFL_WORLD_SIZE", "8", 1);
    setenv("GPUFL_LOCAL_RANK", "1", 1);
    setenv("GPUFL_STEP_SCOPE", "train_step", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "nightly_run_7"); /* sanitised like app */
    CHECK(c.rank == 3 && c.world_size == 8 && c.local_rank == 1);
    CHECK_STR(c.job_source, "gpufl");
    CHECK_STR(c.step_scope, "train_step");
    /* the job alone, no launcher: a job of one process */
    clear_env();
    setenv("GPUFL_JOB", "solo", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "solo");
    CHECK(c.rank == 0 && c.world_size == 1 && c.local_rank == -1);
}

static void test_launchers(void)
{
    client_cfg c;
    clear_env();
    setenv("TORCHELASTIC_RUN_ID", "run-9", 1);
    setenv("RANK", "5", 1);
    setenv("WORLD_SIZE", "16", 1);
    setenv("LOCAL_RANK", "5", 1);
    /* torchrun inside a Slurm allocation: torchrun's ranks win */
    setenv("SLURM_JOB_ID", "1234", 1);
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "2", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "run-9");
    CHECK(c.rank == 5 && c.world_size == 16 && c.local_rank == 5);
    CHECK_STR(c.job_source, "torchelastic");
    /* GPUFL_* override the launcher's values one by one */
    setenv("GPUFL_JOB", "mine", 1);
    setenv("GPUFL_RANK", "6", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "mine");
    CHECK(c.rank == 6 && c.world_size == 16);
    CHECK_STR(c.job_source, "gpufl");

    clear_env();
    setenv("SLURM_JOB_ID", "1234", 1);
    setenv("SLURM_STEP_ID", "2", 1);
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_LOCALID", "1", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "1234.2"); /* one srun step is one job */
    CHECK(c.rank == 1 && c.world_size == 4 && c.local_rank == 1);
    CHECK_STR(c.job_source, "slurm");

    clear_env();
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    setenv("OMPI_MCA_ess_base_jobid", "4181327873", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "4181327873");
    CHECK(c.rank == 2 && c.world_size == 3 && c.local_rank == 0);
    CHECK_STR(c.job_source, "ompi");

    /* PMI gives no job id: no job, until GPUFL_JOB names it */
    clear_env();
    setenv("PMI_RANK", "1", 1);
    setenv("PMI_SIZE", "2", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
    CHECK(c.rank == -1);
    setenv("GPUFL_JOB", "mpi-7", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "mpi-7");
    CHECK(c.rank == 1 && c.world_size == 2 && c.local_rank == -1);
    CHECK_STR(c.job_source, "gpufl");

    /* torchrun without --rdzv-id calls every run "none" */
    clear_env();
    setenv("TORCHELASTIC_RUN_ID", "none", 1);
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
}

static void test_bad_values(void)
{
    client_cfg c;
    char big[200];

    /* a launcher's number that is not one: no job, and the warning */
    clear_env();
    client_env_warning(NULL);
    setenv("SLURM_JOB_ID", "1", 1);
    setenv("SLURM_PROCID", " 1", 1);
    setenv("SLURM_NTASKS", "2", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
    CHECK(strstr(g_client.env_warning, "SLURM_PROCID") != NULL);
    /* a bad local rank loses only the local rank */
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_LOCALID", "-1", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "1");
    CHECK(c.rank == 1 && c.local_rank == -1);
    CHECK(strstr(g_client.env_warning, "SLURM_LOCALID") != NULL);

    /* GPUFL_RANK that does not parse: the option engine's warning, and
     * the launcher's rank is used (the "default") */
    clear_env();
    setenv("TORCHELASTIC_RUN_ID", "r", 1);
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("GPUFL_RANK", "-1", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK(c.rank == 1);
    CHECK(strstr(g_client.env_warning, "GPUFL_RANK") != NULL);

    /* a bad GPUFL_* value's message and the job's are both kept */
    clear_env();
    client_env_warning(NULL);
    setenv("GPUFL_FLUSH_MS", "fast", 1);
    setenv("GPUFL_JOB", "j", 1);
    setenv("GPUFL_RANK", "2", 1);
    setenv("GPUFL_WORLD_SIZE", "2", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK(strstr(g_client.env_warning, "GPUFL_FLUSH_MS") != NULL);
    CHECK(strstr(g_client.env_warning, "2 of 2") != NULL);
    unsetenv("GPUFL_FLUSH_MS");

    /* rank outside the world */
    clear_env();
    setenv("GPUFL_JOB", "j", 1);
    setenv("GPUFL_RANK", "4", 1);
    setenv("GPUFL_WORLD_SIZE", "4", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
    CHECK(strstr(g_client.env_warning, "4 of 4") != NULL);
    /* the rank without the size */
    unsetenv("GPUFL_WORLD_SIZE");
    setenv("GPUFL_RANK", "1", 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
    CHECK(strstr(g_client.env_warning, "world size") != NULL);
    /* a rank and no job id at all */
    unsetenv("GPUFL_JOB");
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
    CHECK(strstr(g_client.env_warning, "no job id") != NULL);
    /* an id longer than 127 bytes is not cut (two jobs could become one) */
    clear_env();
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    setenv("GPUFL_JOB", big, 1);
    CHECK(resolve(&c) == GPUFL_OK);
    CHECK_STR(c.job, "");
    CHECK(strstr(g_client.env_warning, "127 bytes") != NULL);
    clear_env();
    client_env_warning(NULL);
}

static void test_code_wins(void)
{
    gpufl_options o;
    client_cfg c;
    char err[256];
    clear_env();
    setenv("SLURM_JOB_ID", "1", 1);
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_NTASKS", "2", 1);
    gpufl_options_init(&o);
    CHECK(o.rank == -1 && o.world_size == -1 && o.local_rank == -1);
    o.job = "set-in-code";
    o.rank = 0;
    CHECK(client_cfg_resolve(&o, &c, err, sizeof err) == GPUFL_OK);
    CHECK_STR(c.job, "set-in-code");
    CHECK(c.rank == 0 && c.world_size == 2);
    clear_env();
}

static void test_perturb_parse(void)
{
    sim_perturb p;
    char why[256];
    static const char *const bad[] = {
        "kernel=gemm",
        "kernel=gemm:1.2",
        "kernel=gemm:x",
        "kernel=gemm:x0",
        "kernel=gemm:x0.009",
        "kernel=gemm:x-1",
        "kernel=gemm:x1.2@",
        "kernel=gemm:x1.2@-1",
        "kernel=gemm:x1.2x",
        "kernel=gemm:x101",
        "mem=1G",
        "mem=+",
        "mem=+0",
        "mem=+21GiB",
        "mem=+1G,mem=+1G",
        "stall=1",
        "stall=1@",
        "stall=0@1",
        "stall=x@1",
        "stall=3601@1",
        "stall=1.5s@1",
        "kernel=gemm:x1.2,",
        ",mem=+1G",
        "speed=2",
        "kernel=gemm:x1.2@1 2",
    };
    CHECK(sim_perturb_parse(NULL, &p, why, sizeof why) == 0);
    CHECK(p.n_kernel == 0 && p.n_stall == 0 && p.mem_bytes == 0);
    CHECK(sim_perturb_parse("kernel=gemm:x1.2@10, kernel=:x1.3,"
                            "mem=+1.5GiB,stall=0.25@3,stall=2@7",
                            &p, why, sizeof why) == 0);
    REQUIRE(p.n_kernel == 2 && p.n_stall == 2);
    CHECK_STR(p.kernel[0].sub, "gemm");
    CHECK(p.kernel[0].factor == 1.2 && p.kernel[0].from_step == 10);
    CHECK_STR(p.kernel[1].sub, "");
    CHECK(p.kernel[1].factor == 1.3 && p.kernel[1].from_step == 0);
    CHECK_EQ_U64(p.mem_bytes, 3ull << 29);
    CHECK_EQ_U64(p.stall[0].ns, 250000000);
    CHECK_EQ_U64(p.stall[0].step, 3);
    CHECK_EQ_U64(p.stall[1].ns, 2000000000);
    /* the last ':' ends the substring */
    CHECK(sim_perturb_parse("kernel=ns::k:x2", &p, why, sizeof why) == 0);
    CHECK_STR(p.kernel[0].sub, "ns::k");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        if (sim_perturb_parse(bad[i], &p, why, sizeof why) != -1) {
            fprintf(stderr, "accepted: %s\n", bad[i]);
            CHECK(0);
            continue;
        }
        CHECK(strstr(why, "GPUFL_SIM_PERTURB") != NULL);
        CHECK(p.n_kernel == 0 && p.n_stall == 0 && p.mem_bytes == 0);
    }
    /* gpufl_init refuses it, naming the item */
    {
        gpufl_options o;
        client_cfg c;
        gpufl_options_init(&o);
        o.sim_perturb = "kernel=gemm:x1.2,stal=1@2";
        CHECK(client_cfg_resolve(&o, &c, why, sizeof why) == GPUFL_EINVAL);
        CHECK(strstr(why, "\"stal=1@2\"") != NULL);
    }
}

int main(void)
{
    RUN(test_none);
    RUN(test_gpufl_vars);
    RUN(test_launchers);
    RUN(test_bad_values);
    RUN(test_code_wins);
    RUN(test_perturb_parse);
    TEST_DONE();
}
