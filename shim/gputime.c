/* gputime.c — GPU timing (placeholder until phase 2): host timing only. */
#include "internal.h"
int ncs_gpu_on;
int ncs_gpu_init(void) { return 0; }
int ncs_gpu_before(cudaStream_t stream, uint32_t *flags) { return -1; }
void ncs_gpu_after(int token, uint32_t thread, uint64_t ref, int failed) {}
void ncs_gpu_group_member(cudaStream_t stream, uint32_t *flags) {}
void ncs_gpu_group_before(void) {}
void ncs_gpu_group_after(uint32_t thread, uint64_t group, int failed) {}
void ncs_gpu_poll(struct ncs_wbuf *w, uint32_t *records, unsigned drain_ms) {}
void ncs_gpu_atfork_child(void) {}
