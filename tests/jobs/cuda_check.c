/* cuda_check — checks the CUDA runtime double's behaviour; prints PASS:/FAIL: lines.
 *
 * Usage: cuda_check   (a single process; no NCCL involved)
 * Covers: asynchronous streams (work runs after the call returns, in order), events that
 * complete later than cudaEventRecord returns, real elapsed times, cross-stream waits, host
 * functions, the legacy NULL stream, capture (work recorded not run, replayed by
 * cudaGraphLaunch, events and synchronisation during capture), error codes and strings,
 * device selection from CUDA_VISIBLE_DEVICES / NCCLDOUBLE_NGPUS. */
#include "job_util.h"

static int g_fail;
#define CHECK(cond, name) do { int ok_ = !!(cond); if (!ok_) g_fail = 1; \
  printf("%s: cuda double: %s\n", ok_ ? "PASS" : "FAIL", name); fflush(stdout); } while (0)

/* atomic: the double runs launches of one graph exec on different streams at the same time
 * (CUDA orders them; the double does not), so the replayed bumps may run concurrently */
static void bump(void *p) { __atomic_fetch_add((int *)p, 1, __ATOMIC_RELAXED); }
static void append(void *p) { int *v = p; v[1 + v[0]] = v[0]; v[0]++; }
/* a host function that holds its stream until the test opens the gate: what is behind it on
 * the stream cannot have run, whatever the load (no check depends on how long anything takes) */
static void wait_gate(void *p) {
  struct timespec ts = {0, 200000};
  while (!__atomic_load_n((int *)p, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
}
static void open_gate(int *g) { __atomic_store_n(g, 1, __ATOMIC_RELEASE); }

int main(void) {
  cudaStream_t s, s2;
  CUCHK(cudaStreamCreate(&s));
  CUCHK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CUCHK(cudaEventCreate(&a));
  CUCHK(cudaEventCreate(&b));

  /* asynchrony and elapsed time: the stream is held by a gate only this thread opens, so the
   * calls below returning at all proves they do not wait for the stream's work */
  int gate = 0;
  CUCHK(cudaLaunchHostFunc(s, wait_gate, &gate));
  CUCHK(cudaEventRecord(a, s));
  CUCHK(cudaDoubleCompute(s, 30000000)); /* 30 ms */
  CUCHK(cudaEventRecord(b, s));
  CHECK(cudaEventQuery(b) == cudaErrorNotReady, "event after the kernel is not ready yet");
  CHECK(cudaStreamQuery(s) == cudaErrorNotReady, "stream query reports pending work");
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorNotReady, "elapsed time of an incomplete event: cudaErrorNotReady");
  open_gate(&gate);
  CUCHK(cudaEventSynchronize(b));
  CHECK(cudaEventQuery(b) == cudaSuccess && cudaStreamQuery(s) == cudaSuccess, "event and stream complete after sync");
  CUCHK(cudaEventElapsedTime(&ms, a, b));
  CHECK(ms >= 29.9f, "elapsed time is at least the kernel's 30 ms");
  fprintf(stderr, "# figures: elapsed %.3f ms for a 30 ms kernel\n", ms);

  /* order and host functions */
  int seq[40] = {0};
  for (int i = 0; i < 20; i++) CUCHK(cudaLaunchHostFunc(s, append, seq));
  CUCHK(cudaStreamSynchronize(s));
  int inorder = seq[0] == 20;
  for (int i = 0; i < 20; i++) inorder &= seq[1 + i] == i;
  CHECK(inorder, "stream work runs in order");

  /* cross-stream wait: s2 waits for s's event */
  int flag = 0, gate2 = 0;
  CUCHK(cudaLaunchHostFunc(s, wait_gate, &gate2));
  CUCHK(cudaDoubleCompute(s, 20000000));
  CUCHK(cudaEventRecord(a, s));
  CUCHK(cudaStreamWaitEvent(s2, a, 0));
  CUCHK(cudaLaunchHostFunc(s2, bump, &flag));
  struct timespec ts = {0, 5000000};
  nanosleep(&ts, NULL);
  CHECK(__atomic_load_n(&flag, __ATOMIC_RELAXED) == 0, "stream waiting on an event does not run ahead");
  open_gate(&gate2);
  CUCHK(cudaStreamSynchronize(s2));
  CHECK(flag == 1 && cudaEventQuery(a) == cudaSuccess, "stream proceeds after the event");

  /* never-recorded event, disable-timing event */
  cudaEvent_t c;
  CUCHK(cudaEventCreateWithFlags(&c, cudaEventDisableTiming));
  CHECK(cudaEventQuery(c) == cudaSuccess, "never-recorded event queries as complete");
  CUCHK(cudaEventRecord(c, s));
  CUCHK(cudaEventSynchronize(c));
  CHECK(cudaEventElapsedTime(&ms, a, c) == cudaErrorInvalidResourceHandle, "elapsed time with a DisableTiming event fails");
  (void)cudaGetLastError();

  /* legacy stream, memcpy async + sync */
  int *dev;
  CUCHK(cudaMalloc((void **)&dev, 4096));
  int host[1024], back[1024];
  for (int i = 0; i < 1024; i++) host[i] = i * 3;
  CUCHK(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, NULL));
  CUCHK(cudaMemcpy(back, dev, sizeof back, cudaMemcpyDeviceToHost));
  CHECK(memcmp(host, back, sizeof host) == 0, "memcpy on the legacy stream after an async copy");
  CUCHK(cudaMemsetAsync(dev, 0, 4096, s));
  CUCHK(cudaStreamSynchronize(s));
  CHECK(dev[0] == 0 && dev[1023] == 0, "memset async");

  /* capture: recorded, not run; replayed per launch */
  int counter = 0;
  enum cudaStreamCaptureStatus cst;
  CUCHK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
  CUCHK(cudaStreamIsCapturing(s2, &cst));
  CHECK(cst == cudaStreamCaptureStatusActive, "cudaStreamIsCapturing reports an active capture");
  CUCHK(cudaLaunchHostFunc(s2, bump, &counter));
  CUCHK(cudaDoubleCompute(s2, 1000000));
  CHECK(cudaEventRecord(b, s2) == cudaSuccess, "event record inside a capture is allowed");
  CHECK(cudaEventQuery(b) == cudaErrorCapturedEvent, "query of an event recorded in a capture: cudaErrorCapturedEvent");
  CHECK(cudaStreamSynchronize(s2) == cudaErrorStreamCaptureUnsupported, "synchronize while capturing: cudaErrorStreamCaptureUnsupported");
  CHECK(cudaGetLastError() == cudaErrorStreamCaptureUnsupported && cudaGetLastError() == cudaSuccess, "cudaGetLastError reports and clears");
  cudaGraph_t g;
  CHECK(cudaStreamEndCapture(s2, &g) == cudaErrorStreamCaptureInvalidated && g == NULL, "a capture invalidated by a sync fails at end");
  CUCHK(cudaStreamIsCapturing(s2, &cst));
  CHECK(cst == cudaStreamCaptureStatusNone && counter == 0, "capture ended; captured work never ran");

  CUCHK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
  CUCHK(cudaLaunchHostFunc(s2, bump, &counter));
  CUCHK(cudaEventRecord(b, s2));
  CUCHK(cudaStreamWaitEvent(s, b, 0)); /* fork into s: s joins the capture */
  CUCHK(cudaStreamIsCapturing(s, &cst));
  CHECK(cst == cudaStreamCaptureStatusActive, "waiting on a captured event joins the other stream to the capture");
  CUCHK(cudaLaunchHostFunc(s, bump, &counter));
  CUCHK(cudaEventRecord(a, s));
  CUCHK(cudaStreamWaitEvent(s2, a, 0)); /* join back */
  CUCHK(cudaStreamEndCapture(s2, &g));
  CUCHK(cudaStreamIsCapturing(s, &cst));
  CHECK(g != NULL && counter == 0 && cst == cudaStreamCaptureStatusNone, "end capture returns a graph, nothing ran");
  cudaGraphExec_t x;
  CUCHK(cudaGraphInstantiate(&x, g, 0));
  CUCHK(cudaGraphDestroy(g)); /* the exec keeps the nodes */
  CUCHK(cudaGraphLaunch(x, s));
  CUCHK(cudaGraphLaunch(x, s));
  CUCHK(cudaGraphLaunch(x, s2));
  CUCHK(cudaDeviceSynchronize());
  CHECK(counter == 6, "each cudaGraphLaunch replays the captured work");
  CUCHK(cudaGraphExecDestroy(x));
  CHECK(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported, "capturing the legacy stream is refused");
  (void)cudaGetLastError();

  /* devices */
  int n = 0, d = -1;
  CUCHK(cudaGetDeviceCount(&n));
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  int want = cvd ? -1 : job_env_int("NCCLDOUBLE_NGPUS", 8);
  CHECK(want < 0 || n == want, "device count from NCCLDOUBLE_NGPUS (default 8)");
  CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice, "cudaSetDevice out of range: cudaErrorInvalidDevice");
  CUCHK(cudaSetDevice(n - 1));
  CUCHK(cudaGetDevice(&d));
  CHECK(d == n - 1, "cudaGetDevice returns the device set");
  int rv = 0, dv = 0;
  CUCHK(cudaRuntimeGetVersion(&rv));
  CUCHK(cudaDriverGetVersion(&dv));
  CHECK(rv == 13000 && dv >= rv, "runtime and driver versions 13.0");
  CHECK(strcmp(cudaGetErrorString(cudaErrorNotReady), "device not ready") == 0 &&
        strcmp(cudaGetErrorString(cudaSuccess), "no error") == 0, "error strings as CUDA's");
  CHECK(cudaStreamSynchronize((cudaStream_t)&n) == cudaErrorInvalidResourceHandle, "bad stream handle: cudaErrorInvalidResourceHandle");
  (void)cudaGetLastError();
  CUCHK(cudaFree(dev));
  CUCHK(cudaEventDestroy(a));
  CUCHK(cudaEventDestroy(b));
  CUCHK(cudaEventDestroy(c));
  CUCHK(cudaStreamDestroy(s));
  CUCHK(cudaStreamDestroy(s2));
  return g_fail;
}
