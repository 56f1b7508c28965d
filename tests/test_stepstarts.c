/* test_stepstarts.c — where a file's steps start (decoder/analysis/stepstarts.c), its records
 * fed as stretches (io/trace.h: a column chunk's CALL and GPU_TIME records in one callback) and
 * record by record: 5,000 steps of four collectives of distinct signatures, each call followed
 * by its GPU time, so the boundary is decided within the first NCS_STEPMARK_HOLD records and
 * most of the file comes after it. The truth: every step's first call's entry (the four
 * signatures count alike, and the boundary is the one seen first), computed here. A file that says
 * it has no kernel activity (model/kwatch.h: PROCESS format_version 1.0, or a KERNEL_STATUS off
 * before the calls) gives no start (nobody reads them: no kernel is a boundary); one of another
 * format, or whose status says on, gives them all. The starts log itself (model/stages.h): 40,000
 * starts over three blocks, with escapes (a start 5 s after the last, one before it) placed at a
 * block's last words, read back as written. */
#include <stdlib.h>
#include <string.h>

#include "analysis/stepstarts.h"
#include "check.h"
#include "ncclscope/cupti_abi.h"
#include "ncclscope/encode.h"
#include "ncclscope/nccl_abi.h"
#include "ncclscope/ops.h"

#define STEPS 5000
#define PER 4
#define N (STEPS * PER)
#define STRETCH 300 /* records a stretch */

static struct ncs_call c[N];
static struct ncs_gpu_time g[N];

/* The starts of the file fed whole stretches (whole) or a record at a time; their number. First,
 * when fmt: a PROCESS record with that format_version; when kstate >= 0: a KERNEL_STATUS of that
 * state. */
static size_t starts_of(int whole, uint64_t *out, const char *fmt, int kstate) {
  struct ncs_stages st;
  if (ncs_stages_init(&st, 1) != 0) return 0;
  struct ncs_stepstarts *s = ncs_stepstarts_new(1, &st);
  struct ncs_visitor v;
  memset(&v, 0, sizeof v);
  ncs_stepstarts_visitor(s, 0, &v);
  if (fmt) {
    struct ncs_kv kv[] = {{"host", "h", 1}, {"format_version", fmt, strlen(fmt)}};
    struct ncs_process p = {.path = "x.ncs", .major = 5, .minor = 5, .kv = kv, .nkv = 2};
    v.process(v.ctx, &p);
  }
  if (kstate >= 0) {
    uint8_t b[256];
    struct ncs_wbuf w;
    ncs_wbuf_init(&w, b, sizeof b);
    struct ncs_kernel_status ks = {.t = 1, .state = (uint32_t)kstate};
    snprintf(ks.reason, sizeof ks.reason, "test");
    ncs_enc_kernel_status_body(&w, &ks);
    v.raw(v.ctx, &(struct ncs_raw){NCS_REC_KERNEL_STATUS, b, w.len});
  }
  static uint8_t order[2 * N];
  for (size_t i = 0; i < N; i++) { order[2 * i] = 0; order[2 * i + 1] = 1; }
  for (size_t r = 0; r < 2 * N; r += STRETCH) { /* records r .. r + STRETCH: calls and GPU times alternate */
    size_t n = 2 * N - r < STRETCH ? 2 * N - r : STRETCH, c0 = r / 2, nc = (r + n + 1) / 2 - c0, ng = (r + n) / 2 - r / 2;
    if (whole) {
      struct ncs_stretch x = {c + c0, g + r / 2, nc, ng, order + r, NULL, 0};
      v.stretch(v.ctx, &x);
    } else {
      const struct ncs_call *pc = c + c0;
      const struct ncs_gpu_time *pg = g + r / 2;
      for (size_t i = r; i < r + n; i++)
        if (order[i]) v.gpu_times(v.ctx, pg++, 1);
        else v.calls(v.ctx, pc++, 1);
    }
  }
  ncs_stepstarts_file_done(s, 0);
  const struct ncs_step_starts *t = NULL;
  size_t k = ncs_stages_starts(&st, 0, &t);
  if (k && k <= STEPS) ncs_starts_copy(t, out);
  ncs_stepstarts_free(s);
  ncs_stages_free(&st);
  return k;
}

/* The log against the starts put in it: copied out, and read with a cursor. */
static void starts_log(void) {
  enum { NS = 40000 };
  static uint64_t in[NS], out[NS];
  struct ncs_step_starts s = {0};
  uint64_t t = 7;
  int ok = 1;
  for (size_t i = 0; i < NS; i++) {
    /* the first start takes 3 words, the others 1 but escapes (3): start BLOCK - 3 finds one word
     * left (the next block then), the second block's ones fill it to its last word */
    if (i == NCS_STARTS_BLOCK - 3 || i == NCS_STARTS_BLOCK + 100) t += 5000000000ull; /* over UINT32_MAX ns */
    else if (i == NCS_STARTS_BLOCK + 101) t -= 3;                                      /* earlier */
    else t += 1000 + i % 7;
    in[i] = t;
    ok &= ncs_starts_add(&s, t) == 0;
  }
  ok &= s.head && s.head->used == NCS_STARTS_BLOCK - 1 && s.head->next && s.head->next->used == NCS_STARTS_BLOCK; /* as said */
  ncs_starts_copy(&s, out);
  ok &= s.n == NS && !memcmp(in, out, sizeof in);
  struct ncs_starts_cur c;
  ncs_starts_begin(&s, &c);
  size_t k = 0;
  uint64_t x;
  while (ncs_starts_next(&c, &x)) ok &= k < NS && x == in[k++];
  CHECK(ok && k == NS, "stepstarts: the starts log gives back its %d starts, escapes at a block's end included (%zu read)", NS, k);
  ncs_starts_free(&s);
}

int main(void) {
  starts_log();
  static const uint32_t op[PER] = {NCS_OP_AllReduce, NCS_OP_AllReduce, NCS_OP_Broadcast, NCS_OP_AllGather};
  static const uint64_t count[PER] = {1024, 4096, 2048, 512};
  uint64_t t = 1000000;
  for (size_t i = 0; i < N; i++) {
    c[i] = (struct ncs_call){.op = op[i % PER], .thread = 1, .tcall = i + 1, .comm = 1, .seq = i / PER, .count = count[i % PER],
                             .datatype = ncclFloat32, .root = 0, .callsite = (uint32_t)(i % PER) + 1, .t_enter = t, .t_exit = t + 500};
    g[i] = (struct ncs_gpu_time){.kind = NCS_GPU_KIND_CALL, .thread = 1, .ref = i + 1, .gpu_start = t + 100, .gpu_end = t + 900};
    t += 1000 + (i % PER == PER - 1 ? 5000 : 0);
  }
  static uint64_t a[STEPS], b[STEPS];
  size_t na = starts_of(1, a, NULL, -1), nb = starts_of(0, b, NULL, -1);
  int ok = na == STEPS;
  for (size_t k = 0; ok && k < STEPS; k++) ok = a[k] == c[k * PER].t_enter;
  CHECK(ok, "stepstarts: fed as stretches, every step's first call starts a step (%zu starts, want %d)", na, STEPS);
  CHECK(na == nb && !memcmp(a, b, na * sizeof *a), "stepstarts: the same records one at a time give the same starts (%zu)", nb);
  /* what the file says of its kernel activity */
  size_t n55 = starts_of(1, b, "5.5", -1), non = starts_of(1, b, NULL, NCS_KSTATE_ON);
  CHECK(n55 == STEPS && non == STEPS, "stepstarts: format 5.5 (%zu starts) or a KERNEL_STATUS on (%zu) keeps every start (%d)", n55, non, STEPS);
  size_t n10 = starts_of(1, b, "1.0", -1), n10r = starts_of(0, b, "1.0", -1), noff = starts_of(1, b, NULL, NCS_KSTATE_OFF),
         naside = starts_of(0, b, NULL, NCS_KSTATE_STOOD_ASIDE);
  CHECK(!n10 && !n10r && !noff && !naside,
        "stepstarts: a file without kernel activity keeps no start: format 1.0 %zu, %zu (a record at a time), KERNEL_STATUS off %zu, stood aside %zu",
        n10, n10r, noff, naside);
  return check_done();
}
