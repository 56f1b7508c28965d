/* hostile_job — one-rank jobs that do what real jobs do to a preloaded library, each printing a
 * deterministic result on stdout (compared with a run without the shim) and exiting non-zero
 * with a message when something it relies on changed.
 *
 * Usage: hostile_job MODE [N]
 *   tfork N     a thread calls NCCL in a loop while a second (non-main) thread forks N children
 *               one after another; each child asks NCCL for a unique id and its version (odd
 *               children: exit or _exit) or execs /bin/true (even ones)
 *   sigterm     after the first NCCL call: what sigaction reports for SIGTERM/SIGINT; then the
 *               job's own SIGTERM handler without SA_RESTART (a blocked read returns EINTR) and
 *               with it (the read resumes), the signal sent by a child
 *   sigsegv N   the job's own SIGSEGV handler (siglongjmp out of N faults between NCCL calls)
 *   dlpath      after the shim activated: dlopen libnccl by the full path the loader used, dlsym
 *               ncclAllReduce and call it N times
 *   clearenv    clearenv() before the first NCCL call, then a full communicator lifecycle
 *   exitrace N  three threads call ncclAllReduce and ncclCommGetAsyncError in loops; once they
 *               made N calls the main thread calls exit(0) while they are still calling
 *   cancel US   a thread making the process's first NCCL calls is cancelled after US
 *               microseconds; the main thread then makes a communicator, an all-reduce, forks
 *   cancel-destroy US  the same after activation, the thread making and destroying
 *               communicators (CommDestroy waits for the shim's writer)
 *   atfork N    the job's pthread_atfork handlers call NCCL; N forks while a thread calls NCCL
 *   nofile      the job's own descriptor budget: RLIMIT_NOFILE as set by the caller; the job
 *               opens /dev/null until EMFILE after its first NCCL call and prints how many
 * Prints "ok MODE ..." lines; stderr carries diagnostics only. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "job_util.h"

static ncclComm_t comm;
static cudaStream_t stream;
static float *buf;

static void setup(void) {
  ncclUniqueId id;
  NCCHK(ncclGetUniqueId(&id));
  NCCHK(ncclCommInitRank(&comm, 1, id, 0));
  CUCHK(cudaStreamCreate(&stream));
  CUCHK(cudaMalloc((void **)&buf, 64 * sizeof(float)));
}
static void one_allreduce(int i) {
  for (int k = 0; k < 16; k++) buf[k] = (float)(k + i);
  NCCHK(ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, stream));
  CUCHK(cudaStreamSynchronize(stream));
  JOBCHK(buf[3] == (float)(3 + i), "all-reduce result %f", buf[3]);
}
static void teardown(void) {
  NCCHK(ncclCommDestroy(comm));
  CUCHK(cudaFree(buf));
  CUCHK(cudaStreamDestroy(stream));
}

/* ---- tfork ---- */
static atomic_int stop_calls;
static atomic_long calls_made;
static void *caller(void *arg) {
  (void)arg;
  float *x; /* the stream works on it after the call returns: not on this thread's stack */
  CUCHK(cudaMalloc((void **)&x, 4 * sizeof(float)));
  while (!atomic_load(&stop_calls)) {
    NCCHK(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, stream));
    atomic_fetch_add(&calls_made, 1);
  }
  CUCHK(cudaStreamSynchronize(stream));
  CUCHK(cudaFree(x));
  return NULL;
}
static int fork_child(int i) {
  if (i % 2 == 0) {
    execl("/bin/true", "true", (char *)NULL);
    return 9;
  }
  /* CUDA does not survive fork: a child of a process that used the GPU makes no communicator
   * (NCCL and CUDA refuse it); it may still ask NCCL for an id or its version, which activates
   * the shim in the child (its own file and writer thread) */
  ncclUniqueId id;
  int v;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclGetVersion(&v) != ncclSuccess) return 4;
  if (i % 4 == 1) exit(0); /* exit handlers run in the child: the shim's final flush */
  return 0;
}
static void *forker(void *arg) {
  int n = *(int *)arg, bad = 0;
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p == 0) _exit(fork_child(i));
    JOBCHK(p > 0, "fork: %s", strerror(errno));
    int st;
    JOBCHK(waitpid(p, &st, 0) == p, "waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      bad++;
      fprintf(stderr, "hostile_job: child %d %s %d\n", i, WIFSIGNALED(st) ? "died of signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
  }
  return (void *)(intptr_t)bad;
}
static int mode_tfork(int n) {
  setup();
  one_allreduce(0);
  pthread_t a, f;
  JOBCHK(pthread_create(&a, NULL, caller, NULL) == 0, "pthread_create");
  JOBCHK(pthread_create(&f, NULL, forker, &n) == 0, "pthread_create");
  void *bad;
  pthread_join(f, &bad);
  atomic_store(&stop_calls, 1);
  pthread_join(a, NULL);
  teardown();
  printf("ok tfork children=%d bad=%d\n", n, (int)(intptr_t)bad);
  return bad ? 1 : 0;
}

/* ---- sigterm ---- */
static volatile sig_atomic_t got_term, in_read, term_in_read;
static void on_term(int s) { (void)s; got_term++; term_in_read = in_read; }
static const char *disposition(int sig) {
  struct sigaction sa;
  if (sigaction(sig, NULL, &sa) != 0) return "error";
  if (sa.sa_flags & SA_SIGINFO) return "siginfo-handler";
  if (sa.sa_handler == SIG_DFL) return "default";
  if (sa.sa_handler == SIG_IGN) return "ignore";
  return sa.sa_handler == on_term ? "job-handler" : "other-handler";
}
/* One try: a child sends SIGTERM to the parent after `ms` then writes one byte into the pipe
 * `ms` later; NULL when the signal came before the parent was in read() (a loaded machine
 * kept it off the CPU that long: the try tells nothing). */
static const char *read_once(int restart, long ms) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  JOBCHK(sigaction(SIGTERM, &sa, NULL) == 0, "sigaction");
  int p[2];
  JOBCHK(pipe(p) == 0, "pipe");
  got_term = in_read = term_in_read = 0;
  pid_t parent = getpid(), c = fork();
  if (c == 0) {
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    kill(parent, SIGTERM);
    nanosleep(&d, NULL);
    ssize_t w = write(p[1], "x", 1);
    _exit(w == 1 ? 0 : 1);
  }
  close(p[1]);
  char ch;
  in_read = 1;
  ssize_t r = read(p[0], &ch, 1);
  int e = errno;
  in_read = 0;
  int st;
  waitpid(c, &st, 0);
  close(p[0]);
  if (got_term == 1 && !term_in_read) return NULL;
  if (r == 1 && got_term == 1) return "resumed";
  if (r < 0 && e == EINTR && got_term == 1) return "eintr";
  return "unexpected";
}
/* What read() did when the signal came while it was blocked: tries again, the child waiting
 * twice as long, while the signal came before the read (at most 8 tries: 50 ms to 6.4 s). */
static const char *read_through_signal(int restart) {
  const char *how = NULL;
  for (long ms = 50; !how && ms <= 6400; ms *= 2) how = read_once(restart, ms);
  return how ? how : "signal never came during the read";
}
static int mode_sigterm(void) {
  printf("before: term=%s int=%s\n", disposition(SIGTERM), disposition(SIGINT));
  setup();
  one_allreduce(1);
  printf("after first call: term=%s int=%s\n", disposition(SIGTERM), disposition(SIGINT));
  printf("no SA_RESTART: %s\n", read_through_signal(0));
  one_allreduce(2);
  printf("SA_RESTART: %s\n", read_through_signal(1));
  one_allreduce(3);
  teardown();
  printf("after destroy: term=%s\n", disposition(SIGTERM));
  return 0;
}

/* ---- sigsegv ---- */
static sigjmp_buf segv_jump;
static volatile sig_atomic_t segvs;
static void on_segv(int s, siginfo_t *si, void *uc) {
  (void)s; (void)si; (void)uc;
  segvs++;
  siglongjmp(segv_jump, 1);
}
static int mode_sigsegv(int n) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  JOBCHK(sigaction(SIGSEGV, &sa, NULL) == 0, "sigaction");
  setup();
  for (int i = 0; i < n; i++) {
    one_allreduce(i);
    if (!sigsetjmp(segv_jump, 1)) {
      raise(SIGSEGV); /* delivered synchronously, like a fault */
    }
  }
  teardown();
  printf("ok sigsegv faults=%d handler=%s\n", (int)segvs, disposition(SIGSEGV));
  return segvs == n ? 0 : 1;
}

/* ---- dlpath ---- */
static int find_nccl(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  if (info->dlpi_name && strstr(info->dlpi_name, "libnccl.so")) {
    snprintf(arg, 4096, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}
static int mode_dlpath(int n) {
  setup();
  one_allreduce(0);
  char path[4096] = "";
  dl_iterate_phdr(find_nccl, path);
  JOBCHK(path[0], "libnccl not found among the loaded objects");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  JOBCHK(h, "dlopen %s: %s", path, dlerror());
  ncclResult_t (*ar)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) =
    (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))dlsym(h, "ncclAllReduce");
  JOBCHK(ar, "dlsym: %s", dlerror());
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 16; k++) buf[k] = (float)k;
    NCCHK(ar(buf, buf, 16, ncclFloat32, ncclSum, comm, stream));
    CUCHK(cudaStreamSynchronize(stream));
  }
  teardown();
  printf("ok dlpath calls=%d\n", n + 1);
  return 0;
}

/* ---- clearenv ---- */
static int mode_clearenv(void) {
  JOBCHK(clearenv() == 0, "clearenv");
  setup();
  one_allreduce(0);
  teardown();
  extern char **environ;
  printf("ok clearenv environ=%s getenv=%s\n", environ ? "set" : "null", getenv("PATH") ? "set" : "null");
  return 0;
}

/* ---- lowfd ---- */
/* A caller without unwind information (no CFI), as JIT'ed or hand-written code is: an unwinder
 * that walks through it falls back to frame pointers and checks each address it reads. */
void lowfd_call(void);
__asm__(".text\n.globl lowfd_call\n.type lowfd_call,@function\nlowfd_call:\n"
        "  push %rbp\n  mov %rsp, %rbp\n  call lowfd_allreduce\n  pop %rbp\n  ret\n"
        ".size lowfd_call, .-lowfd_call\n");
void lowfd_allreduce(void) { one_allreduce(7); }
static int mode_lowfd(int n) {
  setup();
  one_allreduce(0);
  /* the job owns every descriptor from 3 on: it closes them and opens its own files there */
  for (int fd = 3; fd < 1024; fd++) close(fd);
  char in[] = "/tmp/hostile_job_in.XXXXXX", out[] = "/tmp/hostile_job_out.XXXXXX";
  int a = mkstemp(in), b = mkstemp(out);
  JOBCHK(a == 3 && b == 4, "expected descriptors 3 and 4, got %d %d", a, b);
  unlink(in);
  unlink(out);
  JOBCHK(write(a, "0123456789", 10) == 10 && lseek(a, 0, SEEK_SET) == 0, "write %s", in);
  for (int i = 0; i < n; i++) lowfd_call();
  char got[16] = "";
  ssize_t r = read(a, got, sizeof got - 1);
  struct stat st;
  int still = fstat(a, &st) == 0 && fstat(b, &st) == 0;
  off_t outlen = still ? lseek(b, 0, SEEK_END) : -1;
  teardown();
  printf("ok lowfd input=%.*s open=%d output_bytes=%lld\n", (int)(r > 0 ? r : 0), got, still, (long long)outlen);
  return 0;
}

/* ---- exitrace ---- */
/* exit() while other threads are still inside NCCL calls (a Python job whose daemon threads
 * poll NCCL when the interpreter exits): the exit handlers run beside them */
static void *poller(void *arg) {
  int kind = (int)(intptr_t)arg;
  float *x;
  CUCHK(cudaMalloc((void **)&x, 4 * sizeof(float)));
  for (;;) {
    if (kind) {
      ncclResult_t async;
      ncclCommGetAsyncError(comm, &async);
    } else {
      ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, stream);
    }
    atomic_fetch_add(&calls_made, 1);
  }
  return NULL;
}
static int mode_exitrace(int n) {
  setup();
  one_allreduce(0);
  pthread_t t;
  for (int i = 0; i < 3; i++) JOBCHK(pthread_create(&t, NULL, poller, (void *)(intptr_t)(i == 2)) == 0, "pthread_create");
  while (atomic_load(&calls_made) < n) sched_yield();
  printf("ok exitrace\n");
  exit(0); /* the threads are still calling */
}

/* ---- cancel ---- */
/* A thread cancelled while it makes the process's first NCCL call (a job that gives up on a slow
 * init by cancelling the thread that runs it), after DELAY_US; the job then uses NCCL from its
 * main thread and forks. */
static void *first_call(void *arg) {
  (void)arg;
  ncclUniqueId id;
  for (;;) ncclGetUniqueId(&id); /* cancelled in or between calls */
  return NULL;
}
/* after activation: communicators made and destroyed until cancelled (the destroy waits for
 * the shim's writer) */
static void *comm_cycle(void *arg) {
  (void)arg;
  for (;;) {
    ncclUniqueId id;
    ncclComm_t c;
    if (ncclGetUniqueId(&id) == ncclSuccess && ncclCommInitRank(&c, 1, id, 0) == ncclSuccess) ncclCommDestroy(c);
  }
  return NULL;
}
static int mode_cancel(int delay_us, int after_activation) {
  pthread_t t;
  if (after_activation) {
    ncclUniqueId id;
    NCCHK(ncclGetUniqueId(&id));
  }
  JOBCHK(pthread_create(&t, NULL, after_activation ? comm_cycle : first_call, NULL) == 0, "pthread_create");
  if (delay_us > 0) { struct timespec d = {0, delay_us * 1000L}; nanosleep(&d, NULL); }
  pthread_cancel(t);
  void *res;
  pthread_join(t, &res);
  setup();
  one_allreduce(1);
  pid_t p = fork();
  if (p == 0) _exit(0);
  int st;
  waitpid(p, &st, 0);
  teardown();
  printf("ok cancel %s\n", res == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
  return 0;
}

/* ---- atfork ---- */
/* the job's own fork handlers call NCCL (its prepare handler runs before the shim's, its child
 * handler after) while a second thread calls NCCL in a loop */
static void af_prepare(void) {
  ncclResult_t a;
  ncclCommGetAsyncError(comm, &a);
  ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, stream);
}
static void af_parent(void) { int v; ncclGetVersion(&v); }
static void af_child(void) { int v; ncclUniqueId id; ncclGetVersion(&v); ncclGetUniqueId(&id); }
static int mode_atfork(int n) {
  setup();
  one_allreduce(0);
  JOBCHK(pthread_atfork(af_prepare, af_parent, af_child) == 0, "pthread_atfork");
  pthread_t a;
  JOBCHK(pthread_create(&a, NULL, caller, NULL) == 0, "pthread_create");
  int bad = 0;
  for (int i = 0; i < n; i++) {
    pid_t p = fork();
    if (p == 0) { ncclUniqueId id; _exit(ncclGetUniqueId(&id) == ncclSuccess ? 0 : 3); }
    int st;
    JOBCHK(p > 0 && waitpid(p, &st, 0) == p, "fork/waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st)) bad++;
  }
  atomic_store(&stop_calls, 1);
  pthread_join(a, NULL);
  CUCHK(cudaStreamSynchronize(stream));
  teardown();
  printf("ok atfork children=%d bad=%d\n", n, bad);
  return bad != 0;
}

/* ---- nofile ---- */
static int mode_nofile(void) {
  setup();
  one_allreduce(0);
  int n = 0, fd;
  while ((fd = open("/dev/null", O_RDONLY)) >= 0) n++;
  int e = errno;
  teardown();
  printf("ok nofile opened=%d errno=%s\n", n, e == EMFILE ? "EMFILE" : strerror(e));
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: hostile_job MODE [N]\n"); return 2; }
  int n = argc > 2 ? atoi(argv[2]) : 10;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!strcmp(argv[1], "tfork")) return mode_tfork(n);
  if (!strcmp(argv[1], "sigterm")) return mode_sigterm();
  if (!strcmp(argv[1], "sigsegv")) return mode_sigsegv(n);
  if (!strcmp(argv[1], "dlpath")) return mode_dlpath(n);
  if (!strcmp(argv[1], "clearenv")) return mode_clearenv();
  if (!strcmp(argv[1], "nofile")) return mode_nofile();
  if (!strcmp(argv[1], "lowfd")) return mode_lowfd(n);
  if (!strcmp(argv[1], "exitrace")) return mode_exitrace(n);
  if (!strcmp(argv[1], "cancel")) return mode_cancel(n, 0);
  if (!strcmp(argv[1], "atfork")) return mode_atfork(n);
  if (!strcmp(argv[1], "cancel-destroy")) return mode_cancel(n, 1);
  fprintf(stderr, "hostile_job: unknown mode %s\n", argv[1]);
  return 2;
}
