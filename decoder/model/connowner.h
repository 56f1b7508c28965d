/* connowner.h — which of a process's communicators each NCCL connection line belongs to.
 *
 * NCCL's "Channel .. : a[x] -> b[y] via .." lines name no communicator, and a process may hold
 * several (ncclCommSplit, a rank per thread). Fed one file's COMM records, its NCCL_LOG lines
 * and its calls, in file order, it gives each connection line to the communicator (COMM record
 * index) NCCL was working on when it printed it, by the first rule that names exactly one:
 *  1. the init window of the printing thread: its last "comm 0x.. rank .." init line (Init
 *     START, or the nRanks line; closed by Init COMPLETE) names the ncclComm_t, matched to a
 *     COMM record's handle (connections made at init: NCCL_RUNTIME_CONNECT=0, or before 2.22);
 *  2. the calls in flight when the line was printed (entered before, returned after: NCCL >=
 *     2.22 connects inside the first collective of a communicator, on its caller's thread or a
 *     helper thread of that call);
 *  3. when no call was in flight: all the file's communicators;
 *  4. the file's only communicator.
 * In 1 to 3 a communicator qualifies only when the line's own rank (`a`; the receiver `b` for
 * "[receive]" lines) is its rank and the peer is one of its ranks; of several, the one whose
 * CUDA device is the number in the line's own bracket (cudaDev or nvmlDev: equal unless
 * CUDA_VISIBLE_DEVICES reorders). A line no rule settles is counted, never given.
 * Contract: one per file; lines are kept until ncs_cown_settle (at most 65536, more are
 * counted unsettled); memory: the kept lines and the file's communicators. Never exits. */
#ifndef NCS_CONNOWNER_H
#define NCS_CONNOWNER_H
#include <stdint.h>
#include "io/nccllog.h"
#include "io/trace.h"
#include "model/transport.h"

struct ncs_cown;
struct ncs_cown *ncs_cown_new(void);  /* NULL when out of memory */
void ncs_cown_free(struct ncs_cown *o);
void ncs_cown_comm(struct ncs_cown *o, const struct ncs_comm *c);
/* A parsed log line of the file (any kind; only init and transport lines matter), printed at t
 * (the NCCL_LOG record's t, the calls' clock). */
void ncs_cown_line(struct ncs_cown *o, const struct ncs_nl_rec *r, uint64_t t);
/* A call of the file on communicator index `comm` (0 none), in flight over [t_enter, t_exit]. */
void ncs_cown_call(struct ncs_cown *o, uint32_t comm, uint64_t t_enter, uint64_t t_exit);
/* A run of calls of the file (x[0..n)), as ncs_cown_call on each; nothing to do per call while
 * no line is kept. */
void ncs_cown_calls(struct ncs_cown *o, const struct ncs_call *x, size_t n);
/* The end of the file: each kept line is given (fn with its communicator index) or counted;
 * returns how many lines were not given. Kept lines are dropped. */
uint64_t ncs_cown_settle(struct ncs_cown *o, void (*fn)(void *ctx, uint32_t comm, const struct ncs_tconn *c), void *ctx);
#endif
