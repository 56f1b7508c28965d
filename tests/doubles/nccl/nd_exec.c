/* nd_exec.c — runs NCCL operations on a CUDA double stream worker ("the GPU side"): moves
 * and reduces the data through the communicator's segment and times the kernel on the device
 * clock with the link model (nd_model.c).
 *
 * Contract: nd_task_run() executes a task's collectives in order (each in chunks that fit
 * the staging slots: post, barrier, read; consecutive chunks alternate slot sets), then progresses all its Send/Recv
 * together until done, so send/recv pairs grouped in one task never deadlock. Device time:
 * the kernel starts at cudaDoubleItemStartNs(); each collective publishes its rank's start in
 * the segment (by collective parity) and ends at all-arrived (the latest start of all ranks)
 * + its model; the next starts there. The point-to-point part starts after the collectives;
 * every Send carries its sender's start in an 8-byte header before the payload, and the part
 * ends at max(own start, the starts of the senders it received from) + lat + max(bytes sent,
 * bytes received)/bw. The kernel's end is declared with cudaDoubleItemEndAt; nothing sleeps
 * (except nd_profiler.c's proxy steps, paced on the device clock when a plugin asks for them).
 * After an abort or a dead peer the task stops early and the communicator's async error is set. */
#include "nd_internal.h"

#include <stdlib.h>
#include <string.h>

#include "../include/cuda_double.h"
#include "../include/nccl_double.h"

#define P2P_HDR 8 /* a Send's header: its sender's device start */

static struct nd_redop redop_of(struct ncclComm *c, int id) {
  struct nd_redop r = {.base = id, .fscale = 1.0, .iscale = 1};
  if (id < ncclNumOps) return r;
  struct nd_user_op *u = &c->user_ops[id - ncclNumOps];
  r.base = ND_PREMULSUM;
  const void *p = u->residence == ncclScalarHostImmediate ? (const void *)u->value : u->ptr;
  switch (u->dt) {
  case ncclInt8: r.iscale = *(const int8_t *)p; break;
  case ncclUint8: r.iscale = *(const uint8_t *)p; break;
  case ncclInt32: r.iscale = *(const int32_t *)p; break;
  case ncclUint32: r.iscale = *(const uint32_t *)p; break;
  case ncclInt64: case ncclUint64: r.iscale = *(const int64_t *)p; break;
  case ncclFloat16: r.fscale = nd_half_to_float(*(const uint16_t *)p); break;
  case ncclBfloat16: { uint32_t u32 = (uint32_t)*(const uint16_t *)p << 16; float f;
                       memcpy(&f, &u32, 4); r.fscale = f; break; }
  case ncclFloat32: r.fscale = *(const float *)p; break;
  case ncclFloat64: r.fscale = *(const double *)p; break;
  default: r.fscale = 1.0; break;
  }
  return r;
}

/* One collective, chunked through the slots; this rank's kernel reached it at device time
 * `start`. Sets *t_all_arrived to the latest start of all ranks. Returns 0, or -1 when aborted. */
static int run_coll(const struct nd_op *op, uint64_t start, uint64_t *t_all_arrived) {
  struct ncclComm *c = op->comm;
  const int n = c->nranks, me = c->rank;
  /* published before the first barrier, read after it; a rank rewrites this parity's slot
   * only two collectives later, after everyone passed the next one's first barrier */
  const int par = (int)(c->coll_seq++ & 1);
  atomic_store(&c->seg->ranks[me].dev_arrive[par], start);
  const size_t sz = ncclscope_datatype_size(op->dt), slot = c->seg->slot_bytes;
  const unsigned char *sb = op->sbuf;
  unsigned char *rb = op->rbuf;
  struct nd_redop rop = {0};
  if (op->kind == ND_ALLREDUCE || op->kind == ND_REDUCE || op->kind == ND_REDUCESCATTER)
    rop = redop_of(c, op->redop_id);
  /* per-chunk element count: the slot holds one block, or n blocks for the all-to-all kinds */
  int nblocks = (op->kind == ND_REDUCESCATTER || op->kind == ND_ALLTOALL || op->kind == ND_SCATTER) ? n : 1;
  size_t chunk = slot / (sz * (size_t)nblocks);
  int first = 1;
  for (size_t off = 0; off < op->count; off += chunk) {
    size_t m = op->count - off < chunk ? op->count - off : chunk, bytes = m * sz;
    c->parity = (int)(c->chunk_seq++ & 1);
    unsigned char *mine = nd_slot(c, me);
    /* post */
    switch (op->kind) {
    case ND_ALLREDUCE: case ND_REDUCE: case ND_ALLGATHER: case ND_GATHER:
      memcpy(mine, sb + off * sz, bytes);
      break;
    case ND_BROADCAST:
      if (me == op->root) memcpy(mine, sb + off * sz, bytes);
      break;
    case ND_SCATTER:
      if (me != op->root) break;
      /* fall through */
    case ND_REDUCESCATTER: case ND_ALLTOALL:
      for (int j = 0; j < n; j++) memcpy(mine + (size_t)j * bytes, sb + ((size_t)j * op->count + off) * sz, bytes);
      break;
    default: break;
    }
    if (nd_barrier_wait(c, &c->seg->dev_bar) != 0) return -1;
    if (first) {
      uint64_t all = start;
      for (int k = 0; k < n; k++) {
        uint64_t t = atomic_load(&c->seg->ranks[k].dev_arrive[par]);
        if (t > all) all = t;
      }
      *t_all_arrived = all;
      first = 0;
    }
    /* read */
    switch (op->kind) {
    case ND_ALLREDUCE:
    case ND_REDUCE:
      if (op->kind == ND_REDUCE && me != op->root) break;
      nd_reduce_first(rb + off * sz, nd_slot(c, 0), m, op->dt, &rop);
      for (int k = 1; k < n; k++) nd_reduce_acc(rb + off * sz, nd_slot(c, k), m, op->dt, &rop);
      nd_reduce_fini(rb + off * sz, m, op->dt, &rop, n);
      break;
    case ND_REDUCESCATTER:
      nd_reduce_first(rb + off * sz, nd_slot(c, 0) + (size_t)me * bytes, m, op->dt, &rop);
      for (int k = 1; k < n; k++)
        nd_reduce_acc(rb + off * sz, nd_slot(c, k) + (size_t)me * bytes, m, op->dt, &rop);
      nd_reduce_fini(rb + off * sz, m, op->dt, &rop, n);
      break;
    case ND_BROADCAST:
      memmove(rb + off * sz, nd_slot(c, op->root), bytes);
      break;
    case ND_ALLGATHER:
      for (int k = 0; k < n; k++) memcpy(rb + ((size_t)k * op->count + off) * sz, nd_slot(c, k), bytes);
      break;
    case ND_GATHER:
      if (me == op->root)
        for (int k = 0; k < n; k++) memcpy(rb + ((size_t)k * op->count + off) * sz, nd_slot(c, k), bytes);
      break;
    case ND_ALLTOALL:
      for (int k = 0; k < n; k++)
        memcpy(rb + ((size_t)k * op->count + off) * sz, nd_slot(c, k) + (size_t)me * bytes, bytes);
      break;
    case ND_SCATTER:
      memcpy(rb + off * sz, nd_slot(c, op->root) + (size_t)me * bytes, bytes);
      break;
    default: break;
    }
  }
  return 0;
}

/* One Send or Recv in progress: its stream is an 8-byte header (the sender's device start:
 * hdr) then the payload; done counts bytes of that stream moved. */
struct p2p_state { const struct nd_op *op; size_t done; uint64_t hdr; };

static size_t p2p_total(const struct p2p_state *st) {
  return P2P_HDR + st->op->count * ncclscope_datatype_size(st->op->dt);
}

/* Copies m bytes of the op's stream, from offset st->done, to (send) or from the ring at
 * stream position pos, wrapping around the ring's cap bytes. */
static void p2p_copy(struct p2p_state *st, unsigned char *ring, uint64_t cap, uint64_t pos, size_t m,
                     int send) {
  size_t off = st->done;
  while (m) {
    size_t at = (size_t)(pos % cap), run = cap - at < m ? (size_t)(cap - at) : m;
    unsigned char *mine;
    if (off < P2P_HDR) {
      mine = (unsigned char *)&st->hdr + off;
      if (run > P2P_HDR - off) run = P2P_HDR - off;
    } else {
      mine = (send ? (unsigned char *)(uintptr_t)st->op->sbuf : (unsigned char *)st->op->rbuf) + (off - P2P_HDR);
    }
    if (send) memcpy(ring + at, mine, run);
    else memcpy(mine, ring + at, run);
    off += run;
    pos += run;
    m -= run;
  }
}

/* Moves what the rings allow for one Send or Recv; returns bytes moved. */
static size_t p2p_step(struct p2p_state *st) {
  const struct nd_op *op = st->op;
  struct ncclComm *c = op->comm;
  size_t total = p2p_total(st);
  if (st->done >= total) return 0;
  int send = op->kind == ND_SEND;
  struct nd_chan *ch = send ? nd_chan_at(c, c->rank, op->root) : nd_chan_at(c, op->root, c->rank);
  unsigned char *buf = nd_chan_buf(c, ch);
  uint64_t cap = c->seg->chan_bytes;
  uint64_t head = atomic_load(&ch->head), tail = atomic_load(&ch->tail);
  size_t room = send ? (size_t)(cap - (tail - head)) : (size_t)(tail - head);
  size_t m = total - st->done < room ? total - st->done : room;
  if (!m) return 0;
  p2p_copy(st, buf, cap, send ? tail : head, m, send);
  if (send) atomic_store(&ch->tail, tail + m);
  else atomic_store(&ch->head, head + m);
  st->done += m;
  nd_doorbell_ring(c, op->root);
  return m;
}

static int run_p2p(struct p2p_state *st, int np) {
  for (;;) {
    /* snapshot every doorbell first, so a peer's move during the pass wakes us */
    uint32_t seen[8] = {0};
    struct ncclComm *cs[8];
    int nc = 0, pending = 0;
    for (int i = 0; i < np && nc < 8; i++) {
      struct ncclComm *c = st[i].op->comm;
      int dup = 0;
      for (int j = 0; j < nc; j++) dup |= cs[j] == c;
      if (!dup) { cs[nc] = c; seen[nc] = atomic_load(&c->seg->ranks[c->rank].doorbell); nc++; }
    }
    size_t moved = 0;
    for (int i = 0; i < np; i++) {
      moved += p2p_step(&st[i]);
      pending |= st[i].done < p2p_total(&st[i]);
    }
    if (!pending) return 0;
    if (moved) continue;
    if (nd_doorbell_wait(cs[0], seen[0]) != 0) return -1;
    for (int j = 1; j < nc; j++) if (nd_is_aborted(cs[j])) return -1;
  }
}

static void task_fail(struct nd_task *t) {
  for (int i = 0; i < t->nops; i++) {
    struct ncclComm *c = t->ops[i].comm;
    int ok = ncclSuccess;
    atomic_compare_exchange_strong(&c->async_err, &ok, ncclRemoteError);
  }
}

void nd_task_run(void *arg) {
  struct nd_task *t = arg;
  int np = 0, failed = 0;
  nd_prof_task_begin(t); /* nd_profiler.c: profiler events of a replayed plan */
  uint64_t now = cudaDoubleItemStartNs(); /* the kernel's device time as its work proceeds */
  for (int i = 0; i < t->nops; i++) {
    const struct nd_op *op = &t->ops[i];
    if (op->kind == ND_SEND || op->kind == ND_RECV) { np++; continue; }
    if (failed || nd_is_aborted(op->comm)) { failed = 1; continue; }
    if (op->count == 0) continue;
    nd_prof_kernel_begin(op); /* nd_profiler.c: KernelCh start */
    pthread_mutex_lock(&op->comm->exec_mu);
    uint64_t all = now;
    if (run_coll(op, now, &all) != 0) failed = 1;
    pthread_mutex_unlock(&op->comm->exec_mu);
    if (!failed) now = all + nd_op_model_ns(op);
    cudaDoubleItemEndAt(now); /* the end so far: KernelCh stop reads it */
    nd_prof_kernel_end(op); /* KernelCh stop at the device end */
  }
  if (np && !failed) {
    struct p2p_state stbuf[64], *st = np <= 64 ? stbuf : malloc(sizeof *st * (size_t)np);
    size_t sent = 0, recvd = 0;
    int k = 0;
    const struct ncclComm *pc = NULL;
    for (int i = 0; i < t->nops && st; i++) {
      const struct nd_op *op = &t->ops[i];
      if (op->kind != ND_SEND && op->kind != ND_RECV) continue;
      if (nd_is_aborted(op->comm)) failed = 1;
      nd_prof_kernel_begin(op);
      st[k++] = (struct p2p_state){op, 0, op->kind == ND_SEND ? now : 0};
      if (!pc) pc = op->comm;
      size_t b = op->count * ncclscope_datatype_size(op->dt);
      if (op->kind == ND_SEND) sent += b; else recvd += b;
    }
    if (!st || failed || run_p2p(st, k) != 0) failed = 1;
    uint64_t begin = now;
    for (int i = 0; i < k && !failed; i++)
      if (st[i].op->kind == ND_RECV && st[i].hdr > begin) begin = st[i].hdr;
    if (st != stbuf) free(st);
    if (!failed) now = begin + nd_p2p_model_ns(pc, sent > recvd ? sent : recvd);
    cudaDoubleItemEndAt(now);
    nd_prof_p2p_steps(t, now); /* their NET proxy steps, together */
    for (int i = 0; i < t->nops; i++)
      if (t->ops[i].kind == ND_SEND || t->ops[i].kind == ND_RECV) nd_prof_kernel_end(&t->ops[i]);
  }
  cudaDoubleItemEndAt(now);
  if (failed) task_fail(t);
  if (t->counted) { /* the first run of an enqueued (not captured) task retires it */
    t->counted = 0;
    for (int i = 0; i < t->nops; i++) atomic_fetch_add(&t->ops[i].comm->done, 1);
  }
}

void nd_task_free(void *arg) {
  nd_prof_task_free(arg);
  free(arg);
}
