/* nd_proxy.c — the NCCL double's proxy operations: which network (NET) transfers one task of a
 * rank makes, per channel and peer, with the step count and chunk size NCCL 2.28.9 computes for
 * them (docs/DOUBLES.md, "Profiler events"). Pure arithmetic; nd_profiler.c emits the
 * ProxyOp/ProxyStep events from it.
 *
 * Contract: nd_proxy_ops() fills up to `cap` entries (returns how many it would fill) for one
 * task: a collective (kind, per-rank count x datatype size, root, the algorithm and protocol the
 * double reports, its channels) or a Send/Recv (peer, bytes). Only hops for which net[peer] is
 * set get an operation, as only the NET transport has a proxy progress function in NCCL
 * (src/proxy.cc SaveProxy: "if (connector->proxyConn.proxyProgress == NULL) return").
 * Followed, at v2.28.9-1:
 * - collectives: src/enqueue.cc calcCollChunking (pattern per function and algorithm, stepSize
 *   = buffSizes[proto] / NCCL_STEPS, chunkSteps/sliceSteps only for RING + SIMPLE, LL chunk
 *   halved, LL128 chunk x 15/16, the TREE + LL128 chunk loop, the grain alignment, nsteps =
 *   nstepsPerLoop x DIVUP(bytes, nchunksPerLoop x chunkSize) x chunkSteps) called per channel
 *   with that channel's bytes (scheduleCollTasksToPlan passes nChannels = 1); src/proxy.cc
 *   ncclProxySaveOp + NeedProxy (ring: recv from prev, send to next; pipelines skip the root's
 *   side; tree: the double's chain, up = rank-1, down = rank+1, as its "Trees" log line says);
 *   src/plugin/profiler.cc ncclProfilerStartProxyOpEvent (nSteps = DIVUP(nsteps, sliceSteps),
 *   chunkSize = chunkSize x sliceSteps). Constants: src/init.cc DEFAULT_*BUFFSIZE,
 *   src/include/collectives.h *_CHUNKSTEPS/_SLICESTEPS, src/include/device.h ncclProtoGrainSize.
 * - Send/Recv: src/enqueue.cc addP2pToPlan (LL up to nChannels x NCCL_P2P_LL_THRESHOLD 16384,
 *   SIMPLE step = P2P_NET_CHUNKSIZE 128 KiB (src/init.cc, nNodes > 1), the network chunk tuning
 *   /4 and /2, LL data = chunk / 2, a 0-byte transfer is one step on the first part),
 *   src/include/device.h ncclP2pPartBounds (parts of DIVUP(bytes, nParts) aligned to 4 KiB).
 * The double's own choices (not NCCL's): a collective's count is split evenly over the
 * double's channels (NCCL's scheduleCollTasksToPlan splits by traffic cells), P2P parts are
 * the double's channels 0..n-1 (NCCL's ncclP2pChannelForPart spreads them), and algorithms
 * other than RING and TREE (forced NVLS, COLLNET_*, PAT) get no proxy operation. transSize:
 * the step's payload bytes as the double counts them (slice bytes, the last step the rest). */
#include "nd_internal.h"

#include <string.h>

#define NCCL_STEPS 8
enum { P_LL, P_LL128, P_SIMPLE };                         /* NCCL_PROTO_* order */
static const int k_buff[3] = {8 * 512 * 8 * 16,           /* DEFAULT_LL_BUFFSIZE */
                              120 * 640 * 8 * 8,          /* DEFAULT_LL128_BUFFSIZE */
                              1 << 22};                   /* DEFAULT_BUFFSIZE */
static const int k_grain[3] = {16, 32 * 8 / 16 * 15 * 8, 512}; /* ncclProtoGrainSize */

static int proto_of(const char *p) {
  return !strcmp(p, "LL") ? P_LL : !strcmp(p, "LL128") ? P_LL128 : P_SIMPLE;
}
static size_t divup(size_t a, size_t b) { return (a + b - 1) / b; }
static int log2i(int n) { int l = 0; while (n >>= 1) l++; return l; }

struct sink { struct nd_proxy_op *out; int cap, n; };
static void put(struct sink *s, int ch, int peer, int is_send, int nsteps, int chunk, size_t trans) {
  if (s->n < s->cap)
    s->out[s->n] = (struct nd_proxy_op){.channel = ch, .peer = peer, .is_send = is_send, .nsteps = nsteps,
                                        .chunk = chunk, .trans = trans};
  s->n++;
}

enum pattern { RING, RING_TWICE, PIPE_FROM, PIPE_TO, TREE_UP, TREE_DOWN, TREE_UPDOWN, NONE };

static enum pattern pattern_of(enum nd_kind k, const char *algo) {
  int tree = !strcmp(algo, "TREE"), ring = !strcmp(algo, "RING");
  switch (k) {
  case ND_ALLREDUCE: return tree ? TREE_UPDOWN : ring ? RING_TWICE : NONE;
  case ND_BROADCAST: return tree ? TREE_DOWN : ring ? PIPE_FROM : NONE;
  case ND_REDUCE: return tree ? TREE_UP : ring ? PIPE_TO : NONE;
  case ND_ALLGATHER: case ND_REDUCESCATTER: return ring ? RING : NONE;
  default: return NONE;
  }
}

/* calcCollChunking for one channel's bytes: the profiler's nSteps and chunkSize, the slice */
static void coll_chunking(const struct nd_proxy_in *in, enum pattern pat, size_t nbytes, int *nsteps,
                          int *chunk, size_t *slice) {
  const int p = proto_of(in->proto);
  const int ring_simple = p == P_SIMPLE && (pat == RING || pat == RING_TWICE || pat == PIPE_FROM || pat == PIPE_TO);
  /* info->chunkSteps / sliceSteps (collectives.h): AllReduce, AllGather, ReduceScatter
   * NCCL_STEPS/2 and /4; Broadcast, Reduce 1 */
  const int big = in->kind == ND_ALLREDUCE || in->kind == ND_ALLGATHER || in->kind == ND_REDUCESCATTER;
  const int chunk_steps = ring_simple && big ? NCCL_STEPS / 2 : 1;
  const int slice_steps = ring_simple && big ? NCCL_STEPS / 4 : 1;
  const int step_size = k_buff[p] / NCCL_STEPS;
  int chunk_size = step_size * chunk_steps;
  if (p == P_LL) chunk_size /= 2;
  if (p == P_LL128) chunk_size = chunk_size / 16 * 15; /* NCCL_LL128_LINEELEMS, _DATAELEMS */
  if ((pat == TREE_UP || pat == TREE_DOWN || pat == TREE_UPDOWN) && p == P_LL128) {
    double ppn = (double)in->nranks / in->nnodes;
    double nsteps_ll128 = 1 + log2i(in->nnodes) + 0.1 * ppn;
    while ((double)(nbytes / (size_t)chunk_size) < nsteps_ll128 * 64 / ppn && chunk_size > 131072) chunk_size /= 2;
    while ((double)(nbytes / (size_t)chunk_size) < nsteps_ll128 * 16 / ppn && chunk_size > 32768) chunk_size /= 2;
  }
  chunk_size = chunk_size / k_grain[p] * k_grain[p];
  int per_loop = 1, chunks_per_loop = 1;
  if (pat == RING) { per_loop = in->nranks - 1; chunks_per_loop = in->nranks; }
  if (pat == RING_TWICE) { per_loop = 2 * (in->nranks - 1); chunks_per_loop = in->nranks; }
  size_t nloops = divup(nbytes, (size_t)chunks_per_loop * (size_t)chunk_size);
  int steps = per_loop * (int)nloops * chunk_steps;
  *nsteps = (int)divup((size_t)steps, (size_t)slice_steps);
  *chunk = chunk_size * slice_steps;
  *slice = (size_t)(chunk_size / chunk_steps * slice_steps);
}

static void coll_ops(const struct nd_proxy_in *in, struct sink *s) {
  const enum pattern pat = pattern_of(in->kind, in->algo);
  const int n = in->nranks, me = in->rank;
  if (pat == NONE || n < 2) return;
  const size_t sz = in->elem_size, per_rank = in->kind == ND_ALLGATHER || in->kind == ND_REDUCESCATTER ? (size_t)n : 1;
  const int prev = (me + n - 1) % n, next = (me + 1) % n;
  const int up = me - 1, down = me + 1 < n ? me + 1 : -1; /* the double's tree: a chain by rank */
  for (int c = 0; c < in->nch; c++) {
    size_t cnt = in->count / (size_t)in->nch + ((size_t)c < in->count % (size_t)in->nch);
    if (!cnt) continue;
    size_t nbytes = cnt * sz * per_rank, slice;
    int nsteps, chunk;
    coll_chunking(in, pat, nbytes, &nsteps, &chunk, &slice);
    size_t trans = slice < nbytes ? slice : nbytes;
    /* ncclProxySaveOp's order per pattern; NeedProxy for the pipelines */
#define HOP(PEER, SEND) do { if ((PEER) >= 0 && in->net[PEER]) put(s, c, PEER, SEND, nsteps, chunk, trans); } while (0)
    switch (pat) {
    case RING: case RING_TWICE: HOP(prev, 0); HOP(next, 1); break;
    case PIPE_FROM: if (in->root != me) HOP(prev, 0); if (in->root != next) HOP(next, 1); break;
    case PIPE_TO: if (in->root != prev) HOP(prev, 0); if (in->root != me) HOP(next, 1); break;
    case TREE_UP: HOP(down, 0); HOP(up, 1); break;
    case TREE_DOWN: HOP(down, 1); HOP(up, 0); break;
    case TREE_UPDOWN: HOP(down, 0); HOP(up, 1); HOP(down, 1); HOP(up, 0); break;
    default: break;
    }
#undef HOP
  }
}

static void p2p_ops(const struct nd_proxy_in *in, struct sink *s) {
  const int peer = in->root, is_send = in->kind == ND_SEND;
  if (peer < 0 || peer >= in->nranks || peer == in->rank || !in->net[peer]) return;
  const size_t bytes = in->count * in->elem_size;
  const int ll = bytes <= (size_t)in->nch * 16384; /* NCCL_P2P_LL_THRESHOLD per channel */
  const int step = ll ? k_buff[P_LL] / NCCL_STEPS : 1 << 17; /* P2P_NET_CHUNKSIZE */
  int chunk = step;
  if (!ll && bytes < (size_t)step) chunk /= 4;
  else if (bytes < 8 * (size_t)step) chunk /= 2;
  const int data = ll ? chunk / 2 : chunk;
  if (bytes == 0) { put(s, 0, peer, is_send, 1, chunk, 0); return; }
  const size_t part = (divup(bytes, (size_t)in->nch) + 4095) / 4096 * 4096;
  for (int c = 0; c < in->nch; c++) {
    size_t beg = (size_t)c * part, end = beg + part;
    if (beg > bytes) beg = bytes;
    if (end > bytes) end = bytes;
    if (end == beg) continue;
    put(s, c, peer, is_send, (int)divup(end - beg, (size_t)data), chunk, end - beg < (size_t)data ? end - beg : (size_t)data);
  }
}

int nd_proxy_ops(const struct nd_proxy_in *in, struct nd_proxy_op *out, int cap) {
  struct sink s = {out, out ? cap : 0, 0};
  if (!in->net || in->nch < 1) return 0;
  if (in->kind == ND_SEND || in->kind == ND_RECV) p2p_ops(in, &s);
  else coll_ops(in, &s);
  return s.n;
}
