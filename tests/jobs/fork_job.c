/* fork_job — NCCL use across fork and exec.
 *
 * Usage: fork_job [--truth DIR] [-n CALLS]
 * The parent makes a 1-rank communicator and issues CALLS all-reduces; then it forks
 *  - a child that makes its own new communicator (and stream) and issues CALLS/2 all-reduces,
 *  - a child that execs this program as "fork_job --exec-child", which does the same with
 *    CALLS/4 all-reduces in the new image,
 *  - a child that never touches NCCL (it only computes and exits),
 * and issues CALLS more all-reduces while they run. Every result is checked. stdout (parent
 * only, after all children ended) is deterministic. --truth DIR: each process that used NCCL
 * writes DIR/truth-<role>-<pid>.json ({"role", "pid", "ppid", "ops": {...}}); the idle child
 * writes DIR/idle-<pid>.json saying it made no NCCL call. */
#include <getopt.h>
#include <sys/wait.h>

#include "job_util.h"
#include "ncclscope/ops.h"

static const char *g_truth;
static long g_ar, g_other[NCS_OP_LIMIT];

static void run_allreduces(ncclComm_t comm, cudaStream_t s, int calls, float base) {
  float *x;
  CUCHK(cudaMalloc((void **)&x, 256 * 4));
  for (int i = 0; i < calls; i++) {
    for (int k = 0; k < 256; k++) x[k] = base + (float)(i % 7);
    NCCHK(ncclAllReduce(x, x, 256, ncclFloat32, ncclSum, comm, s));
    g_ar++;
    CUCHK(cudaStreamSynchronize(s));
    JOBCHK(x[0] == base + (float)(i % 7), "wrong all-reduce result in pid %d", (int)getpid());
  }
  CUCHK(cudaFree(x));
}

static void write_truth(const char *role) {
  if (!g_truth) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/truth-%s-%d.json", g_truth, role, (int)getpid());
  FILE *f = fopen(path, "w");
  JOBCHK(f, "cannot write %s", path);
  fprintf(f, "{\"role\": \"%s\", \"pid\": %d, \"ppid\": %d, \"ops\": {", role, (int)getpid(), (int)getppid());
  fprintf(f, "\n  \"AllReduce\": {\"calls\": %ld, \"count\": %ld, \"bytes\": %ld}", g_ar, g_ar * 256, g_ar * 1024);
  for (int op = 1; op < NCS_OP_LIMIT; op++)
    if (g_other[op]) fprintf(f, ",\n  \"%s\": {\"calls\": %ld, \"count\": 0, \"bytes\": 0}", ncs_op_name((unsigned)op), g_other[op]);
  fprintf(f, "\n }\n}\n");
  JOBCHK(fclose(f) == 0, "cannot write %s", path);
}

/* A process's own fresh communicator, used for `calls` all-reduces, then destroyed. */
static void own_comm_work(int calls, float base, const char *role) {
  ncclUniqueId id;
  ncclComm_t comm;
  cudaStream_t s;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  g_other[NCS_OP_GetUniqueId]++;
  g_other[NCS_OP_CommInitRank]++;
  CUCHK(cudaStreamCreate(&s));
  run_allreduces(comm, s, calls, base);
  NCCHK(ncclCommDestroy(comm));
  g_other[NCS_OP_CommDestroy]++;
  CUCHK(cudaStreamDestroy(s));
  write_truth(role);
}

int main(int argc, char **argv) {
  int calls = 40, exec_child = 0;
  static const struct option opts[] = {{"truth", 1, 0, 'g'}, {"exec-child", 0, 0, 'e'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
    if (o == 'n') calls = atoi(optarg);
    else if (o == 'g') g_truth = optarg;
    else if (o == 'e') exec_child = 1;
    else { fprintf(stderr, "usage: fork_job [--truth DIR] [-n CALLS]\n"); return 2; }
  }
  if (exec_child) { own_comm_work(calls, 3, "exec-child"); return 0; }

  ncclUniqueId id;
  ncclComm_t comm;
  cudaStream_t s;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  g_other[NCS_OP_GetUniqueId]++;
  g_other[NCS_OP_CommInitRank]++;
  CUCHK(cudaStreamCreate(&s));
  run_allreduces(comm, s, calls, 1);
  fflush(stdout);

  pid_t kids[3];
  kids[0] = fork();
  if (kids[0] == 0) {
    g_ar = 0;
    memset(g_other, 0, sizeof g_other);
    own_comm_work(calls / 2, 2, "fork-child");
    _exit(0);
  }
  kids[1] = fork();
  if (kids[1] == 0) {
    char n[32];
    snprintf(n, sizeof n, "%d", calls / 4);
    char *args[8] = {argv[0], "--exec-child", "-n", n, NULL, NULL, NULL};
    if (g_truth) { args[4] = "--truth"; args[5] = (char *)g_truth; }
    execv("/proc/self/exe", args);
    _exit(127);
  }
  kids[2] = fork();
  if (kids[2] == 0) {
    volatile double acc = 0;
    for (int i = 0; i < 1000000; i++) acc += i * 0.5;
    if (g_truth) {
      char path[4096];
      snprintf(path, sizeof path, "%s/idle-%d.json", g_truth, (int)getpid());
      FILE *f = fopen(path, "w");
      if (f) { fprintf(f, "{\"role\": \"idle-child\", \"pid\": %d, \"ppid\": %d, \"ops\": {}}\n", (int)getpid(), (int)getppid()); fclose(f); }
    }
    _exit(0);
  }
  run_allreduces(comm, s, calls, 1);
  int ok = 1;
  for (int i = 0; i < 3; i++) {
    int st = 0;
    JOBCHK(kids[i] > 0, "fork failed");
    waitpid(kids[i], &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  NCCHK(ncclCommDestroy(comm));
  g_other[NCS_OP_CommDestroy]++;
  CUCHK(cudaStreamDestroy(s));
  write_truth("parent");
  printf("fork_job: parent %d all-reduces, fork child %d, exec child %d, idle child 0: %s\n", 2 * calls,
         calls / 2, calls / 4, ok ? "all ok" : "a child failed");
  return ok ? 0 : 1;
}
