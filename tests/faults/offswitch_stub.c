/* offswitch_stub.c — a libnccl.so.2 whose every entry point (NCCLSCOPE_PROTOTYPES) answers with
 * a value that says which function ran: entry point number i returns ncclResult_t i % 8 (all
 * eight codes, ncclInProgress included), sets errno to 300 + i when i is even and leaves it
 * alone when i is odd; the two string functions return the address of "s<i>". Nothing else:
 * no output argument is written, nothing is read. stub_calls() counts the calls that reached
 * it (not an nccl* name: the shim never wraps it). Built by tests/faults/common.sh for
 * tests/test_offswitch.sh: errno and return values must reach the job unchanged. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ncclscope/nccl_abi.h"
#include "offswitch.h"

static atomic_long calls;
static const char strs[OFF_FN_COUNT][32] = {
#define STR_(ret, name, params, args) "s" #name,
  NCCLSCOPE_PROTOTYPES(STR_)
#undef STR_
};
long stub_calls(void) { return atomic_load(&calls); }
const char *stub_str(int i) { return strs[i]; }

static intptr_t hit(int i) {
  atomic_fetch_add(&calls, 1);
  if (off_sets_errno(i)) errno = off_errno(i);
  if (i == OFF_GetErrorString || i == OFF_GetLastError) return (intptr_t)strs[i];
  return off_rc(i);
}
#define STUB_(ret, name, params, args) \
  ret nccl##name params { return (ret)hit(OFF_##name); }
#pragma GCC diagnostic ignored "-Wpedantic"
NCCLSCOPE_PROTOTYPES(STUB_)
