/* ext.c — libext.so: an "extension module" linked against libnccl.so.2 (DT_NEEDED), the way a
 * Python extension links NCCL; tests/test_fault_dlopen.sh dlopen()s it with RTLD_LOCAL from
 * dlopen_job.c, so NCCL is loaded privately, after the process started. */
#include <stdio.h>
#include "nccl_decl.h"

int cudaDeviceSynchronize(void); /* the CUDA runtime NCCL uses (the CPU double in the tests) */

__attribute__((visibility("default"))) int ext_run(int n) {
  ncclUniqueId id;
  ncclComm_t c = NULL;
  static float a[64], b[64];
  int bad = 0;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&c, 1, id, 0) != ncclSuccess) return -1;
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 64; k++) a[k] = (float)(k * i);
    bad |= ncclAllReduce(a, b, 64, ncclFloat32, ncclSum, c, NULL) != ncclSuccess;
    cudaDeviceSynchronize(); /* the collective reads `a` asynchronously */
  }
  cudaDeviceSynchronize();
  printf("ext sum %.1f\n", (double)b[63]);
  bad |= ncclCommDestroy(c) != ncclSuccess;
  return bad ? -1 : n;
}
