/*
 * test_idle_slurm.c - the parser behind --slurm-scontrol: `scontrol show
 * job -d` text as Slurm 22.05 prints it (one job a record, one field a
 * line), GRES index lists, multi-node jobs and host lists, jobs that do
 * not count (pending, no GPU, another node), and field text hidden in a
 * job name; the job of a process from a cgroup v1 line or its
 * environment (fixture tree).  The real scontrol is
 * tests/sched/test_sched.py's.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "idle/idle.h"
#include "test.h"

/* Two records as printed on the test node "vm" (abridged), then a
 * multi-node job, a pending one, one without GPUs, one on another node,
 * and one whose name carries a fake UserId and Nodes line. */
static const char TEXT[] =
    "JobId=7 JobName=train\n"
    "   UserId=nobody(65534) GroupId=nogroup(65534) MCS_label=N/A\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "   NodeList=vm\n"
    "   JOB_GRES=gpu:1\n"
    "     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:1)\n"
    "   TresPerNode=gres:gpu:1\n"
    "   \n"
    "\n"
    "JobId=8 JobName=big\n"
    "   UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "   JOB_GRES=gpu:a100:6\n"
    "     Nodes=gpu[01-02] CPU_IDs=0-3 Mem=0 GRES=gpu:a100:4(IDX:0,2-3)\n"
    "     Nodes=vm,gpu07 CPU_IDs=0 Mem=0 GRES=gpu:a100:2(IDX:4-5),"
    "mps:100(0/100)\n"
    "\n"
    "JobId=9 JobName=waiting\n"
    "   UserId=bob(1002) GroupId=bob(1002) MCS_label=N/A\n"
    "   JobState=PENDING Reason=Resources Dependency=(null)\n"
    "     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:6)\n"
    "\n"
    "JobId=10 JobName=cpu\n"
    "   UserId=bob(1002) GroupId=bob(1002) MCS_label=N/A\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "     Nodes=vm CPU_IDs=0 Mem=0 GRES=\n"
    "\n"
    "JobId=11 JobName=elsewhere\n"
    "   UserId=bob(1002) GroupId=bob(1002) MCS_label=N/A\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "     Nodes=vm2 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:7)\n"
    "\n"
    "JobId=12 JobName=x UserId=root(0) Nodes=vm GRES=gpu(IDX:8)\n"
    "   UserId=mallory(1003) GroupId=mallory(1003) MCS_label=N/A\n"
    "   JobState=SUSPENDED Reason=None Dependency=(null)\n"
    "   Command=/bin/x Nodes=vm GRES=gpu(IDX:9)\n"
    "     Nodes=vm CPU_IDs=0 Mem=0 GRES=gpu(IDX:10)\n";

static void test_parse(void)
{
    idle_slurm_job j[8];
    int n = idle_slurm_parse(TEXT, sizeof TEXT - 1, "vm", j, 8);
    CHECK(n == 3);
    CHECK_STR(j[0].id, "7");
    CHECK_STR(j[0].user, "nobody");
    CHECK(j[0].gpus == 1u << 1);
    CHECK_STR(j[1].id, "8");
    CHECK_STR(j[1].user, "alice");
    CHECK(j[1].gpus == (1u << 4 | 1u << 5)); /* vm's part only */
    CHECK_STR(j[2].id, "12");
    CHECK_STR(j[2].user, "mallory"); /* the field, not the name's text */
    CHECK(j[2].gpus == 1u << 10);
    /* gpu01's view of job 8 */
    n = idle_slurm_parse(TEXT, sizeof TEXT - 1, "gpu01", j, 8);
    CHECK(n == 1 && j[0].gpus == (1u << 0 | 1u << 2 | 1u << 3));
    /* capped, and nothing from an empty answer */
    CHECK(idle_slurm_parse(TEXT, sizeof TEXT - 1, "vm", j, 1) == 1);
    CHECK(idle_slurm_parse("", 0, "vm", j, 8) == 0);
    CHECK(idle_slurm_parse("No jobs in the system\n", 22, "vm", j, 8) == 0);
}

/* A node with more than 32 GPUs: indices 32..63 are GPUs like the others
 * (a 32-bit mask shifted past its width: UB, and on x86 index 40 read as
 * 8), 64 and above are beyond what the detector watches. */
static void test_wide_indices(void)
{
    static const char wide[] =
        "JobId=70 JobName=wide\n"
        "   UserId=dave(1005) GroupId=dave(1005) MCS_label=N/A\n"
        "   JobState=RUNNING Reason=None Dependency=(null)\n"
        "     Nodes=vm CPU_IDs=0-3 Mem=0 GRES=gpu:4(IDX:31-32,40,63)\n"
        "\n"
        "JobId=71 JobName=beyond\n"
        "   UserId=dave(1005) GroupId=dave(1005) MCS_label=N/A\n"
        "   JobState=RUNNING Reason=None Dependency=(null)\n"
        "     Nodes=vm CPU_IDs=0-3 Mem=0 GRES=gpu:2(IDX:64,96)\n";
    idle_slurm_job j[4];
    int n = idle_slurm_parse(wide, sizeof wide - 1, "vm", j, 4);
    CHECK(n == 1);
    CHECK_STR(j[0].id, "70");
    CHECK(j[0].gpus == ((uint64_t)1 << 31 | (uint64_t)1 << 32 |
                        (uint64_t)1 << 40 | (uint64_t)1 << 63));
    CHECK(idle_slurm_holds(&j[0], 40));
    CHECK(idle_slurm_holds(&j[0], 63));
    CHECK(!idle_slurm_holds(&j[0], 8));
    CHECK(!idle_slurm_holds(&j[0], 64));
}

static void test_hostlist(void)
{
#define HAS(l, n) idle_slurm_hostlist_has(l, strlen(l), n)
    CHECK(HAS("vm", "vm"));
    CHECK(!HAS("vm2", "vm"));
    CHECK(HAS("a,vm,b", "vm"));
    CHECK(HAS("gpu[01-04]", "gpu03"));
    CHECK(!HAS("gpu[01-04]", "gpu3")); /* zero-padded: widths differ */
    CHECK(!HAS("gpu[01-04]", "gpu05"));
    CHECK(HAS("gpu[1-12]", "gpu11"));
    CHECK(HAS("n[1,3,5-6]x", "n6x"));
    CHECK(!HAS("n[1,3,5-6]x", "n4x"));
    CHECK(HAS("a[1-2],b[7-9]", "b8"));
    CHECK(!HAS("gpu[01-04", "gpu01"));
    /* an empty name is no node, even where the list has an empty item
     * (fuzz_slurm's crash-fe72af13, corpus hostlist-empty-item) */
    CHECK(!HAS(",vm", ""));
    CHECK(!HAS("vm,", ""));
#undef HAS
}

static void put(const char *root, const char *rel, const char *text, size_t len)
{
    char path[512], cmd[600];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    CHECK(system(cmd) == 0);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fwrite(text, 1, len, f);
    fclose(f);
}
#define PUT(root, rel, lit) put(root, rel, lit, sizeof(lit) - 1)

/* Debian's proctrack/cgroup on a v1 or hybrid host names the job in the
 * freezer line only (the v2 line is "/"); proctrack/linuxproc leaves
 * SLURM_JOB_ID in the environment only. */
static void test_owner_v1_and_env(void)
{
    char root[] = "/tmp/test_idle_slurm_XXXXXX", cmd[600];
    idle_env e;
    idle_owner o;
    CHECK(mkdtemp(root) != NULL);
    memset(&e, 0, sizeof e);
    e.root = root;
    PUT(root, "etc/passwd",
        "alice:x:1001:1001::/home/alice:/bin/sh\n"
        "bob:x:1002:1002::/home/bob:/bin/sh\n");
    PUT(root, "proc/200/cgroup",
        "6:freezer:/slurm_vm/uid_1001/job_42/step_batch\n"
        "4:memory:/\n0::/\n");
    PUT(root, "proc/200/status", "Uid:\t1001\t1001\t1001\t1001\n");
    PUT(root, "proc/201/cgroup", "6:freezer:/\n0::/\n");
    PUT(root, "proc/201/status", "Uid:\t1002\t1002\t1002\t1002\n");
    PUT(root, "proc/201/environ",
        "HOME=/home/bob\0SLURM_JOBID=7\0SLURM_JOB_ID=43\0");
    PUT(root, "proc/202/cgroup", "0::/user.slice/user-1002.slice\n");
    PUT(root, "proc/202/status", "Uid:\t1002\t1002\t1002\t1002\n");
    PUT(root, "proc/202/environ", "SLURM_JOB_ID=4x4\0");
    CHECK(idle_owner_of_pid(&e, 200, &o) == 0);
    CHECK_STR(o.job, "42");
    CHECK_STR(o.user, "alice");
    CHECK(idle_owner_of_pid(&e, 201, &o) == 0);
    CHECK_STR(o.job, "43"); /* the first name asked for wins */
    CHECK_STR(o.user, "bob");
    CHECK(idle_owner_of_pid(&e, 202, &o) == 0);
    CHECK_STR(o.job, ""); /* not a job id */
    CHECK_STR(o.user, "bob");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

/* No host name and no --slurm-node: refused, saying what to pass (it
 * asked scontrol about node "" before, and every GPU read as nobody's).
 * A host name of "" needs a UTS namespace: root only, else skipped. */
static void test_node_unknown(void)
{
    int fds[2], st = 0;
    char got[512] = "";
    pid_t pid;

    CHECK(pipe(fds) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        idle_slurm *sl = NULL;
        char why[256] = "";
        int err = 0;
        close(fds[0]);
        if (unshare(CLONE_NEWUTS) != 0 || sethostname("", 0) != 0)
            _exit(77);
        err = idle_slurm_new(&sl, "/bin/true", NULL, why, sizeof why);
        if (write(fds[1], why, strlen(why)) < 0)
            _exit(2);
        _exit(err == GPUFL_EINVAL && !sl ? 0 : 1);
    }
    close(fds[1]);
    if (read(fds[0], got, sizeof got - 1) < 0)
        got[0] = 0;
    close(fds[0]);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) {
        printf("  (skipped: no UTS namespace for a host name of \"\")\n");
        return;
    }
    CHECK(WEXITSTATUS(st) == 0);
    CHECK(strstr(got, "--slurm-node") != NULL);
}

int main(void)
{
    RUN(test_node_unknown);
    RUN(test_owner_v1_and_env);
    RUN(test_parse);
    RUN(test_wide_indices);
    RUN(test_hostlist);
    TEST_DONE();
}
