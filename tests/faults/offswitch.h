/* offswitch.h — what tests/faults/offswitch_stub.c answers, shared with offswitch_job.c: the
 * entry points numbered in NCCLSCOPE_PROTOTYPES order, the return code and errno of each. */
#ifndef NCS_OFFSWITCH_H
#define NCS_OFFSWITCH_H
enum {
#define OFF_ENUM_(ret, name, params, args) OFF_##name,
  NCCLSCOPE_PROTOTYPES(OFF_ENUM_)
#undef OFF_ENUM_
  OFF_FN_COUNT
};
static inline int off_rc(int i) { return i % 8; }
static inline int off_sets_errno(int i) { return i % 2 == 0; }
static inline int off_errno(int i) { return 300 + i; }
#endif
