/* test_trace_writer.h — a small deterministic trace writer for the decoder's tests, built only
 * on include/ncclscope/encode.h and chunk.h (independent of the shim).
 *
 * Contract: tw_open() writes the file header; records are appended to the current chunk with
 * the tw_* helpers (or ncs_enc_* on tw->w followed by tw->nrec++); tw_flush() compresses the
 * chunk as one zstd frame and writes it with its header (the CALL delta state restarts);
 * tw_close() flushes with the FINAL flag when asked. Same calls, same bytes. */
#ifndef NCS_TEST_TRACE_WRITER_H
#define NCS_TEST_TRACE_WRITER_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "ncclscope/chunk.h"
#include "ncclscope/encode.h"
#include "ncclscope/ops.h"

struct tw {
  FILE *f;
  uint8_t *raw;
  struct ncs_wbuf w;
  struct ncs_call_delta d;
  uint32_t nrec;
  uint64_t index, dropped;
};
#define TW_RAW_CAP (8u << 20)

static int tw_open(struct tw *t, const char *path, uint32_t pid, uint64_t realtime) {
  memset(t, 0, sizeof *t);
  t->f = fopen(path, "wb");
  t->raw = malloc(TW_RAW_CAP);
  if (!t->f || !t->raw) return -1;
  uint8_t h[NCS_FILE_HEADER_SIZE];
  ncs_encode_file_header(h, realtime, pid);
  fwrite(h, 1, sizeof h, t->f);
  ncs_wbuf_init(&t->w, t->raw, TW_RAW_CAP);
  return 0;
}

/* Writes the current chunk (even an empty one when force is set). */
static int tw_flush(struct tw *t, uint32_t flags) {
  size_t cap = NCS_CHUNK_BOUND(t->w.len);
  uint8_t *z = malloc(cap);
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  size_t n = z ? ncs_chunk_pack(cctx, 3, z, cap, t->raw, t->w.len, t->nrec, t->index++, t->dropped, flags) : 0;
  ZSTD_freeCCtx(cctx);
  if (!n) { free(z); return -1; }
  fwrite(z, 1, n, t->f);
  free(z);
  ncs_wbuf_init(&t->w, t->raw, TW_RAW_CAP);
  ncs_call_delta_reset(&t->d);
  t->nrec = 0;
  return 0;
}

static int tw_close(struct tw *t, int final) {
  int rc = 0;
  if (final || t->nrec) rc = tw_flush(t, final ? NCS_CHUNK_F_FINAL : 0);
  if (fclose(t->f)) rc = -1;
  free(t->raw);
  return rc;
}

static int tw_flush(struct tw *t, uint32_t flags);
/* Starts a new chunk when the current one cannot take `need` more bytes. */
static void tw_room(struct tw *t, size_t need) { if (t->w.cap - t->w.len < need) tw_flush(t, 0); }
static void tw_call(struct tw *t, const struct ncs_call *c) { tw_room(t, NCS_CALL_MAX); ncs_enc_call(&t->w, &t->d, c); t->nrec++; }
static void tw_kv(struct tw *t, const struct ncs_kv *kv, size_t n) { ncs_enc_process(&t->w, kv, n); t->nrec++; }
#define TW_REC(name, T) static void tw_##name(struct tw *t, const T *x) { tw_room(t, 1 << 16); ncs_enc_##name(&t->w, x); t->nrec++; }
TW_REC(thread, struct ncs_thread)
TW_REC(comm, struct ncs_comm)
TW_REC(comm_end, struct ncs_comm_end)
TW_REC(callsite, struct ncs_callsite)
TW_REC(module, struct ncs_module)
TW_REC(drop, struct ncs_drop)
TW_REC(clock, struct ncs_clock)
TW_REC(log_line, struct ncs_log_line)
#undef TW_REC
static void tw_gpu_time(struct tw *t, const struct ncs_gpu_time *x) { tw_room(t, 1 << 16); ncs_enc_gpu_time(&t->w, &t->d, x); t->nrec++; }

/* The golden job: rank `rank` of 2 on host "node-a", a DDP-like loop with known totals. Per
 * rank: 12 AllReduce (fp32, 1 Mi elements then 256 Ki), 1 Broadcast (8 Mi fp16), 2 AllGather
 * (int8 4096), a group of Send+Recv (fp32 65536 each), GroupStart/GroupEnd, with GPU_TIME for
 * each call, one DROP, a NCCL_LOG line, a call site, over 3 chunks. Times are fixed. */
static int tw_golden_rank(const char *path, int rank, int final) {
  struct tw t;
  if (tw_open(&t, path, 1000u + (uint32_t)rank, 1700000000000000000ull)) return -1;
  char rk[8];
  snprintf(rk, sizeof rk, "%d", rank);
  struct ncs_kv kv[] = {{"host", "node-a", 6}, {"pid", rank ? "1001" : "1000", 4},
                        {"cmdline", "python\0train.py", 15}, {"format_version", "1.0", 3},
                        {"env.RANK", rk, strlen(rk)}, {"env.WORLD_SIZE", "2", 1}};
  tw_kv(&t, kv, sizeof kv / sizeof *kv);
  struct ncs_clock ck = {1700000000000000000ull, 1000000000ull, 40};
  tw_clock(&t, &ck);
  struct ncs_thread th = {1, 4242u + (unsigned)rank, "MainThread", 0};
  tw_thread(&t, &th);
  struct ncs_module mod = {.module = 1, .base = 0x400000, .path = "/usr/bin/python3"};
  tw_module(&t, &mod);
  struct ncs_frame fr[2] = {{1, 0x1234, 0x10, "train_step"}, {1, 0x2000, 0x8, "main"}};
  struct ncs_callsite cs = {77, 2, fr};
  tw_callsite(&t, &cs);
  struct ncs_comm cm = {.comm = 1, .init_op = NCS_OP_CommInitRank, .thread = 1,
                        .comm_id = 0xfeedfacecafebeefull, .handle = 0x7f0000001000ull + (uint64_t)rank,
                        .t_enter = 1000100000ull, .t_exit = 1000200000ull, .rank = rank, .nranks = 2,
                        .device = rank};
  tw_comm(&t, &cm);
  uint64_t now = 1001000000ull, tcall = 1, seq = 0;
  struct ncs_log_line ll = {now, "node-a:1000:1000 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", 0};
  ll.len = strlen(ll.line);
  tw_log_line(&t, &ll);
  for (int i = 0; i < 12; i++) {
    struct ncs_call c = {0};
    c.op = NCS_OP_AllReduce; c.thread = 1; c.tcall = tcall++; c.comm = 1; c.seq = ++seq;
    c.count = i < 6 ? 1048576 : 262144; c.datatype = 7; c.redop = 0; c.root = -1;
    c.stream = 0x5000; c.t_enter = now + 10000000; c.t_exit = c.t_enter + 20000;
    c.callsite = 77;
    now = c.t_exit;
    tw_call(&t, &c);
    struct ncs_gpu_time g = {0, 1, 0, c.tcall, c.t_enter + 50000, c.t_enter + 50000 + (i < 6 ? 2000000 : 500000)};
    tw_gpu_time(&t, &g);
    if (i == 5) tw_flush(&t, 0);
  }
  struct ncs_call b = {0};
  b.op = NCS_OP_Broadcast; b.thread = 1; b.tcall = tcall++; b.comm = 1; b.seq = ++seq;
  b.count = 8388608; b.datatype = 6; b.redop = 255; b.root = 0; b.stream = 0x5000;
  b.t_enter = now + 1000000; b.t_exit = b.t_enter + 15000;
  now = b.t_exit;
  tw_call(&t, &b);
  for (int i = 0; i < 2; i++) {
    struct ncs_call c = b;
    c.op = NCS_OP_AllGather; c.tcall = tcall++; c.seq = ++seq; c.count = 4096; c.datatype = 0;
    c.root = -1; c.t_enter = now + 1000; c.t_exit = c.t_enter + 3000;
    now = c.t_exit;
    tw_call(&t, &c);
  }
  struct ncs_drop dr = {NCS_DROP_BUFFER_FULL, 1, 3};
  tw_drop(&t, &dr);
  t.dropped = 3;
  tw_flush(&t, 0);
  /* a group: GroupStart, Send, Recv, GroupEnd */
  uint64_t gid = tcall;
  struct ncs_call g = {0};
  g.op = NCS_OP_GroupStart; g.thread = 1; g.tcall = tcall++; g.datatype = 255; g.redop = 255;
  g.root = -1; g.t_enter = now + 1000; g.t_exit = g.t_enter + 100; g.depth = 0; g.group = gid;
  tw_call(&t, &g);
  uint64_t p2p = 0;
  for (int i = 0; i < 2; i++) {
    struct ncs_call c = g;
    c.op = i ? NCS_OP_Recv : NCS_OP_Send; c.tcall = tcall++; c.comm = 1; c.seq = ++p2p;
    c.count = 65536; c.datatype = 7; c.root = 1 - rank; c.stream = 0x5000; c.depth = 1;
    c.t_enter = g.t_exit + 200 * (uint64_t)(i + 1); c.t_exit = c.t_enter + 150;
    tw_call(&t, &c);
  }
  struct ncs_call ge = g;
  ge.op = NCS_OP_GroupEnd; ge.tcall = tcall++; ge.depth = 0; ge.t_enter = g.t_exit + 1000; ge.t_exit = ge.t_enter + 5000;
  tw_call(&t, &ge);
  struct ncs_gpu_time gg = {1, 1, 0, gid, ge.t_enter + 1000, ge.t_enter + 301000};
  tw_gpu_time(&t, &gg);
  struct ncs_comm_end ce = {1, NCS_OP_CommDestroy, 1, 0, ge.t_exit + 1000, ge.t_exit + 2000};
  if (final) tw_comm_end(&t, &ce); /* a cut trace: killed with its communicator still open */
  return tw_close(&t, final);
}
#endif
