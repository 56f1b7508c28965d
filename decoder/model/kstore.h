/* kstore.h — one trace file's kernels (KERNEL records) as read, kept once for every analysis of
 * a run that reads them: gputime's GPU-time figures (model/kact.h) and whatif's relayout
 * (model/relayout.h) each held a copy of their own, 24 bytes a kernel each, both alive while
 * the file was read; report's stages (model/stages.h) now hold one per file.
 *
 * Contract: the store's first user of a file fills it (ncs_stages_kernels says which: the first
 * to ask), the others read it. Each element is a struct ncs_kstore_k: start, end (start + duration,
 * as an unsigned sum: it wraps for a damaged duration; a reader wanting the saturated end takes
 * UINT64_MAX where end < start), stream, and until a user rewrites them (whatif, when its file
 * is done, after every other user, then packs them into model/relayout.h's 16-byte kernels),
 * info = kclass << NCS_KS_CLASS_SHIFT | the name id, ids at or
 * above NCS_KS_NAME_MAX read as NCS_KS_NAME_MAX (no KERNEL_NAME can be found for them). A kernel
 * of an unknown class is not kept (counted in `bad`). ncs_kstore_sort orders the kernels by
 * (start, end), stably (base/runsort.h), once; kernels added in that order already (a shim's
 * trace mostly) are not looked at again. Memory: 24 bytes a kernel (base/bigarr.h). One
 * file's store is used by one thread at a time. */
#ifndef NCS_KSTORE_H
#define NCS_KSTORE_H
#include <stddef.h>
#include <stdint.h>

#define NCS_KS_CLASS_SHIFT 29
#define NCS_KS_NAME_MAX ((1u << NCS_KS_CLASS_SHIFT) - 1)
struct ncs_kernel;
struct ncs_kstore_k { uint64_t start, end; uint32_t stream, info; };
struct ncs_kstore {
  struct ncs_kstore_k *k;
  size_t n, cap;
  uint64_t bad;   /* KERNEL records of an unknown class, or not kept (out of memory) */
  int sorted;     /* in (start, end) order: sorted, or added in that order */
};
static inline uint32_t ncs_ks_class(const struct ncs_kstore_k *k) { return k->info >> NCS_KS_CLASS_SHIFT & 3u; }
static inline uint32_t ncs_ks_name(const struct ncs_kstore_k *k) { return k->info & NCS_KS_NAME_MAX; }
/* Appends x[0..n). */
void ncs_kstore_add(struct ncs_kstore *s, const struct ncs_kernel *x, size_t n);
void ncs_kstore_sort(struct ncs_kstore *s);
void ncs_kstore_free(struct ncs_kstore *s); /* and zeroes it */
#endif
