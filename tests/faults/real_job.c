/* real_job.c — linked against the real NCCL (/usr/local/cuda/lib/libnccl.so.2) by
 * tests/test_fault_dlopen.sh: ncclGetVersion and ncclGetUniqueId work without a GPU,
 * ncclCommInitRank fails ("CUDA driver version is insufficient"). Prints every return code,
 * ncclGetErrorString and ncclGetLastError, so the test can check the shim passes errors
 * through unchanged. Exit status: the ncclCommInitRank return code. */
#include <stdio.h>
#include "nccl_decl.h"

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int v = 0;
  ncclResult_t r = ncclGetVersion(&v);
  printf("ncclGetVersion %d %d\n", (int)r, v);
  ncclUniqueId id;
  r = ncclGetUniqueId(&id);
  printf("ncclGetUniqueId %d %s\n", (int)r, ncclGetErrorString(r));
  ncclComm_t c = NULL;
  r = ncclCommInitRank(&c, 1, id, 0);
  printf("ncclCommInitRank %d %s comm %s\n", (int)r, ncclGetErrorString(r), c ? "set" : "null");
  const char *last = ncclGetLastError(NULL);
  printf("last error: %s\n", last ? last : "(null)");
  return (int)r;
}
