/* kernel_check — checks the CUDA double's side of nvcc-compiled programs (cuda_kernels.c,
 * cuda_device.c); prints PASS:/FAIL: lines.
 *
 * Usage: kernel_check   (a single process; no NCCL involved)
 * Calls the runtime exactly as nvcc's generated host code does (crt/host_runtime.h: register a
 * fat binary and its kernels at load time; a <<<grid, block, shmem, stream>>> launch pushes the
 * call configuration, the host stub pops it and launches through __cudaGetKernel +
 * __cudaLaunchKernel), and as a program calling cudaLaunchKernel itself. Truth: the kernels the
 * double reports through its truth hook, in stream order, under the registered device names. */
#include "job_util.h"

#include <pthread.h>
#include <string.h>

static int g_fail;
#define CHECK(cond, name) do { int ok_ = !!(cond); if (!ok_) g_fail = 1; \
  printf("%s: kernel double: %s\n", ok_ ? "PASS" : "FAIL", name); fflush(stdout); } while (0)

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *g_seen[16];
static int g_nseen;
static void truth(const struct cudaDoubleActivity *a) {
  if (a->kind != cudaDoubleActivityKernel) return;
  pthread_mutex_lock(&g_mu);
  if (g_nseen < 16) g_seen[g_nseen] = a->name;
  g_nseen++;
  pthread_mutex_unlock(&g_mu);
}

static void host_stub_a(void) {} /* the host-side addresses nvcc registers kernels under */
static void host_stub_b(void) {}
static void never_registered(void) {}

int main(void) {
  cudaDoubleSetTruthHook(truth);
  void **mod = __cudaRegisterFatBinary((void *)"fatbin");
  CHECK(mod != NULL, "__cudaRegisterFatBinary gives a handle");
  __cudaRegisterFunction(mod, (const char *)host_stub_a, (char *)"_Z6kernelPfi", "_Z6kernelPfi", -1,
                         NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(mod, (const char *)host_stub_b, (char *)"_Z5otherv", "_Z5otherv", -1,
                         NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(mod);

  cudaStream_t s;
  CUCHK(cudaStreamCreate(&s));
  int dummy = 0;
  void *args[] = {&dummy};
  /* a <<<2, 32, 0, s>>> launch of kernel a, as nvcc's stub makes it */
  dim3 g = {2, 1, 1}, b = {32, 1, 1}, g2, b2;
  size_t shmem = 1;
  cudaStream_t st = NULL;
  CHECK(__cudaPushCallConfiguration(g, b, 0, s) == 0, "__cudaPushCallConfiguration accepts a configuration");
  CHECK(__cudaPopCallConfiguration(&g2, &b2, &shmem, &st) == cudaSuccess && g2.x == 2 && b2.x == 32 &&
        shmem == 0 && st == s, "__cudaPopCallConfiguration gives back the grid, block, shared memory and stream");
  cudaKernel_t k = NULL;
  CHECK(__cudaGetKernel(&k, (const void *)host_stub_a) == cudaSuccess && k, "__cudaGetKernel finds a registered kernel");
  CHECK(__cudaLaunchKernel(k, g2, b2, args, shmem, st) == cudaSuccess, "__cudaLaunchKernel launches it");
  CHECK(cudaLaunchKernel((const void *)host_stub_b, g, b, args, 0, s) == cudaSuccess,
        "cudaLaunchKernel launches a registered kernel by its host address");
  CUCHK(cudaStreamSynchronize(s));
  pthread_mutex_lock(&g_mu);
  int n = g_nseen;
  int names_ok = n == 2 && !strcmp(g_seen[0], "_Z6kernelPfi") && !strcmp(g_seen[1], "_Z5otherv");
  pthread_mutex_unlock(&g_mu);
  CHECK(names_ok, "two kernels ran on the stream, in order, under their registered device names");

  cudaGetLastError();
  CHECK(cudaLaunchKernel((const void *)never_registered, g, b, args, 0, s) == cudaErrorInvalidDeviceFunction,
        "an unregistered function: cudaErrorInvalidDeviceFunction");
  CHECK(cudaGetLastError() == cudaErrorInvalidDeviceFunction, "... which is the thread's last error");
  dim3 zero = {0, 1, 1};
  CHECK(cudaLaunchKernel((const void *)host_stub_a, zero, b, args, 0, s) == cudaErrorInvalidValue,
        "a zero grid: cudaErrorInvalidValue");
  CHECK(__cudaPopCallConfiguration(&g2, &b2, &shmem, &st) == cudaErrorInvalidValue,
        "popping with no configuration pushed fails");

  /* capture: a launch is captured like any kernel and runs once per replay */
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUCHK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUCHK(cudaLaunchKernel((const void *)host_stub_a, g, b, args, 0, s));
  CUCHK(cudaStreamEndCapture(s, &graph));
  CUCHK(cudaGraphInstantiate(&exec, graph, 0));
  CUCHK(cudaStreamSynchronize(s));
  pthread_mutex_lock(&g_mu);
  int before = g_nseen;
  pthread_mutex_unlock(&g_mu);
  CUCHK(cudaGraphLaunch(exec, s));
  CUCHK(cudaGraphLaunch(exec, s));
  CUCHK(cudaStreamSynchronize(s));
  pthread_mutex_lock(&g_mu);
  int after = g_nseen;
  pthread_mutex_unlock(&g_mu);
  CHECK(before == 2 && after == 4, "a captured launch does not run at capture, and runs once per replay (2 replays)");
  CUCHK(cudaGraphExecDestroy(exec));
  CUCHK(cudaGraphDestroy(graph));

  __cudaUnregisterFatBinary(mod);
  CHECK(cudaLaunchKernel((const void *)host_stub_a, g, b, args, 0, s) == cudaErrorInvalidDeviceFunction,
        "after __cudaUnregisterFatBinary its kernels are gone");

  /* device properties agree with the attributes */
  struct cudaDeviceProp p;
  int major = 0, sms = 0, bus = 0, ndev = 0;
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaGetDeviceProperties(&p, ndev - 1));
  CUCHK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ndev - 1));
  CUCHK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ndev - 1));
  CUCHK(cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, ndev - 1));
  CHECK(p.major == 9 && p.minor == 0 && major == 9 && sms == p.multiProcessorCount && bus == p.pciBusID &&
        p.name[0], "device properties (cc 9.0, 132 SMs) agree with cudaDeviceGetAttribute");
  CHECK(cudaGetDeviceProperties(&p, ndev) == cudaErrorInvalidDevice, "a device out of range: cudaErrorInvalidDevice");
  size_t fr = 0, tot = 0;
  CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot == p.totalGlobalMem && fr <= tot,
        "cudaMemGetInfo: the device's total memory");
  void *h = NULL;
  CHECK(cudaHostAlloc(&h, 4096, cudaHostAllocMapped) == cudaSuccess && h, "cudaHostAlloc");
  void *dp = NULL;
  CHECK(cudaHostGetDevicePointer(&dp, h, 0) == cudaSuccess && dp == h, "cudaHostGetDevicePointer: the host pointer");
  CHECK(cudaFreeHost(h) == cudaSuccess, "cudaFreeHost");
  CHECK(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset");
  cudaDoubleSetTruthHook(NULL);
  CUCHK(cudaStreamDestroy(s));
  return g_fail;
}
