/* profile.h — what report's `profile` analysis (profile.c) found, as data: per collective
 * function, the algorithms, protocols and channel counts NCCL chose, from PROFILE and
 * PROFILE_ID records (docs/PROFILER.md), per file and over all files. Filled in finish();
 * render/profile_render.c prints it. Valid until the analysis' destroy(). */
#ifndef NCS_PROFILE_H
#define NCS_PROFILE_H
#include <stdint.h>
#include "ncclscope/records.h"

#define NCS_PF_FUNCS 16
#define NCS_PF_COMBOS 12

struct ncs_profile_combo { char algo[NCS_PROF_STR], proto[NCS_PROF_STR]; uint64_t events; };
/* The ranks a file's events came from, per communicator (NCCL's commHash): a process holding
 * several ranks (a rank per thread) counts each of them. NCS_PF_COMMS communicators, ranks below
 * NCS_PF_RANK_BITS (a rank past it counts as rank % NCS_PF_RANK_BITS). */
#define NCS_PF_COMMS 8
#define NCS_PF_RANK_BITS 256
struct ncs_profile_ranks { uint64_t hash; uint64_t bits[NCS_PF_RANK_BITS / 64]; };
struct ncs_profile_func {
  char name[NCS_PROF_STR];
  uint64_t events, other; /* other: events whose algo/proto pair did not fit */
  uint64_t count;         /* sum of the events' element counts */
  uint32_t ch_min, ch_max;
  int ncombos;
  struct ncs_profile_combo combo[NCS_PF_COMBOS];
  int ranks; /* in the job-wide merge: the ranks that had this function, summed over files */
  int ncomms;
  struct ncs_profile_ranks rk[NCS_PF_COMMS]; /* per file: which ranks of which communicator */
};
struct ncs_profile_file { uint64_t events, dropped, bad, other_funcs; int nfuncs; struct ncs_profile_func f[NCS_PF_FUNCS]; };

struct ncs_profile_result {
  uint64_t events, dropped;           /* over all files */
  int nfuncs;                         /* functions over all files, merged (ranks: summed) */
  struct ncs_profile_func funcs[NCS_PF_FUNCS];
  int nfiles;
  const struct ncs_profile_file *file; /* [nfiles]: each file's own */
};
#endif
