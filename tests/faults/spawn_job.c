/* spawn_job.c — process-creation patterns around NCCL calls, for tests/test_spawn*.sh.
 *
 * Usage: spawn_job MODE [PROGRAM ARGS...]. Every mode first makes a one-rank communicator and
 * 3 AllReduce calls ("pre" calls), then:
 *   exec PROG ARGS     execv PROG (same pid, the shim's constructor runs again in the new image)
 *   vfork PROG ARGS    vfork + execv PROG in the child; the parent waits, then 3 more AllReduce
 *   vforkinit PROG ARGS  as vfork, but right after ncclCommInitRank, before any AllReduce (the
 *                      shim's writer has just started): no "pre" AllReduce, 3 after the child
 *   execfail PROG      execv of a PROG that does not exist: prints the error, then 3 more AllReduce
 *   execlp PROG ARGS   as exec, through execlp (the variadic form; at most 4 ARGS)
 *   spawn PROG ARGS    posix_spawn PROG; the parent waits, then 3 more AllReduce
 *   daemon MARKER      double fork + setsid: the grandchild makes its own communicator, 5
 *                      AllReduce, writes "done PID" to MARKER and exits; the parent returns
 *                      at once after destroying its communicator
 * Prints what happened ("child exit N"), exit 0 when every NCCL call succeeded. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_decl.h"

/* from the CUDA runtime (the CPU double in the tests): results are complete after it */
int cudaDeviceSynchronize(void);

extern char **environ;
static int bad;
#define NCALL(e) do { if ((e) != ncclSuccess) { bad = 1; printf("nccl error at %s\n", #e); } } while (0)

static ncclComm_t make_comm(void) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  NCALL(ncclGetUniqueId(&id));
  NCALL(ncclCommInitRank(&c, 1, id, 0));
  return c;
}
static void reduce(ncclComm_t c, int n) {
  static float a[256], b[256];
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 256; k++) a[k] = (float)(k + i);
    NCALL(ncclAllReduce(a, b, 256, ncclFloat32, ncclSum, c, NULL));
    cudaDeviceSynchronize(); /* the collective reads `a` asynchronously */
  }
  cudaDeviceSynchronize();
  printf("sum %.1f\n", (double)b[255]);
}
static void report_child(pid_t pid) {
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) { printf("wait failed\n"); bad = 1; return; }
  printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: spawn_job exec|execlp|execfail|vfork|vforkinit|spawn PROG [ARGS] | daemon MARKER\n"); return 2; }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *mode = argv[1];
  ncclComm_t c = make_comm();
  if (!c) return 3;
  if (!strcmp(mode, "vforkinit")) {
    pid_t pid = vfork();
    if (pid == 0) { execv(argv[2], argv + 2); _exit(127); }
    report_child(pid);
    reduce(c, 3);
    NCALL(ncclCommDestroy(c));
    return bad ? 3 : 0;
  }
  reduce(c, 3);
  fflush(stdout);
  if (!strcmp(mode, "execlp")) {
    const char *a[5] = {NULL, NULL, NULL, NULL, NULL};
    for (int i = 3; i < argc && i < 7; i++) a[i - 3] = argv[i];
    execlp(argv[2], argv[2], a[0], a[1], a[2], a[3], (char *)NULL);
    perror("execlp");
    return 4;
  }
  if (!strcmp(mode, "execfail")) { /* an exec that fails: the image goes on */
    execv(argv[2], argv + 2);
    printf("execv failed: %s\n", strerror(errno));
    reduce(c, 3);
  } else if (!strcmp(mode, "exec")) {
    execv(argv[2], argv + 2);
    perror("execv");
    return 4;
  } else if (!strcmp(mode, "vfork")) {
    pid_t pid = vfork();
    if (pid == 0) { execv(argv[2], argv + 2); _exit(127); }
    report_child(pid);
    reduce(c, 3);
  } else if (!strcmp(mode, "spawn")) {
    pid_t pid;
    if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0) { printf("spawn failed\n"); return 4; }
    report_child(pid);
    reduce(c, 3);
  } else if (!strcmp(mode, "daemon")) {
    pid_t pid = fork();
    if (pid == 0) {
      setsid();
      if (fork() != 0) _exit(0);
      int fd = open("/dev/null", O_RDWR);
      if (fd >= 0) { dup2(fd, 0); dup2(fd, 1); dup2(fd, 2); }
      ncclComm_t d = make_comm();
      if (d) { reduce(d, 5); NCALL(ncclCommDestroy(d)); }
      FILE *m = fopen(argv[2], "w");
      if (m) { fprintf(m, "done %d %d\n", (int)getpid(), bad); fclose(m); }
      exit(bad ? 3 : 0);
    }
    report_child(pid);
  } else {
    fprintf(stderr, "spawn_job: unknown mode %s\n", mode);
    return 2;
  }
  NCALL(ncclCommDestroy(c));
  return bad ? 3 : 0;
}
