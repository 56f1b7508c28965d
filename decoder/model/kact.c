/* kact.c — GPU-time figures of one process from its kernel activity (kact.h, docs/METRICS.md).
 *
 * Contract: see kact.h. Method: every kernel, copy and set is an interval on the GPU; the
 * compute set is the union of the non-NCCL ones, the communication set the union of NCCL's
 * kernels. One sweep over the sorted interval ends partitions [first start, last end] into
 * compute-only, overlapped (both), exposed (communication only) and idle (neither). Each NCCL
 * kernel's exposed part is its length minus its overlap with the compute set (the compute time
 * the sweep passes between its start and its end); it is charged to the operation its name
 * carries and, when that operation's kernels and calls match one to one in order (one kernel
 * per call, as outside groups), to the call's size. The same sweep counts the kernels and pairs
 * the calls as the kernels start: nothing is kept per kernel but the ones running. A chain of
 * NCCL kernels of one name that each run alone (one stream's collectives, as most of a shim's
 * trace) takes a loop of its own (comm_chain) that adds their whole-number sums once. */
#include "model/kact.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/bigarr.h"
#include "base/runsort.h"
#include "io/grow.h"
#include "model/knames.h"
#include "model/kstore.h"
#include "model/kwatch.h"
#include "model/rules.h"
#include "ncclscope/cupti_abi.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "model/wordlog.h"

struct kname { uint32_t id; int op, nccl; };  /* op: index into fig.op, -1 not NCCL; nccl: an NCCL kernel's name */
/* What a kernel's name id says, as the names' linear search said it (the first kname of that
 * id; op_any: the first of that id with an op), looked up in a table by id while the figures
 * are made (ids are the shim's small numbers; past NAME_TABLE, the search). */
struct nmap { signed char known, op, nccl, op_any; };
#define NAME_TABLE (1u << 20)
/* The collective / point-to-point calls of one operation, in order, as a word log
 * (model/wordlog.h) read once, in order, by ncs_kact_figures: a call's code is 1 + the index
 * of its size S in the size table (the first NSIZES distinct sizes); an escape holds S (two
 * words, low first). 4 bytes a call for a DDP job (calls a few ms apart, a handful of sizes),
 * written with no branch on a length (add_words). */
#define NSIZES 255                 /* distinct sizes with an index */
#define NSLOTS 512                 /* the size table's hash slots (power of two, > 2 x NSIZES) */
#define ESC_WORDS 2
struct ncs_kact {
  struct ncs_kstore own, *ks; /* the kernels: its own, or a store shared with others (ncs_kact_share) */
  int fill;                   /* it appends KERNEL records to ks */
  struct kname *names; size_t nnames, capnames;
  int lift; /* a name is NCCL's though its record said compute: lift its kernels (figures) */
  struct ncs_kact_fig f;
  struct ncs_wlog calls[NCS_KACT_MAX_OPS]; /* by fig.op index */
  uint64_t sizes[NSIZES];              /* the size table, in first-seen order */
  uint8_t size_slot[NSLOTS];           /* hash slots: index + 1, 0 empty */
  uint64_t slot_size[NSLOTS];          /* the size in each slot; an empty one holds a size that
                                          does not hash to it (1 at slot 0, 0 elsewhere), so
                                          "slot_size[size_hash(S)] == S" alone says S is there */
  uint32_t nsizes;
  signed char call_slot[NCS_OP_LIMIT]; /* fig.op slot of a call's op + 1; 0 not looked up yet */
  int calls_off;                       /* a KERNEL_STATUS off / stood aside, or a PROCESS of format 1.0,
                                          came before any KERNEL (calls_stop) */
};

struct ncs_kact *ncs_kact_new(void) {
  struct ncs_kact *k = calloc(1, sizeof *k);
  if (k) {
    k->ks = &k->own;
    k->fill = 1;
    k->f.state = -1;
    k->slot_size[0] = 1;
  }
  return k;
}

static void free_logs(struct ncs_kact *k) {
  for (int i = 0; i < NCS_KACT_MAX_OPS; i++) ncs_wlog_free(&k->calls[i]);
}

void ncs_kact_free(struct ncs_kact *k) {
  if (!k) return;
  ncs_kstore_free(&k->own);
  free(k->names);
  free_logs(k);
  free(k);
}


/* The fig.op slot of an operation name (created when new); -1 when the table is full. */
static int op_slot(struct ncs_kact *k, const char *name, size_t len) {
  if (len >= sizeof k->f.op[0].name) len = sizeof k->f.op[0].name - 1;
  for (int i = 0; i < k->f.nops; i++)
    if (strlen(k->f.op[i].name) == len && !memcmp(k->f.op[i].name, name, len)) return i;
  if (k->f.nops == NCS_KACT_MAX_OPS) return -1;
  struct ncs_kact_op *o = &k->f.op[k->f.nops];
  memcpy(o->name, name, len);
  o->name[len] = 0;
  o->sized = 1;
  return k->f.nops++;
}

/* "ncclDevKernel_AllReduce_Sum_f32_RING_LL" -> "AllReduce" (model/knames.h) */
static int op_of_kernel(struct ncs_kact *k, const char *name) {
  size_t len;
  const char *p = ncs_kernel_op(name, &len);
  return p ? op_slot(k, p, len) : -1;
}

void ncs_kact_share(struct ncs_kact *k, struct ncs_kstore *ks, int fill) {
  if (!ks) return;
  k->ks = ks;
  k->fill = fill;
}
void ncs_kact_add_kernels(struct ncs_kact *k, const struct ncs_kernel *x, size_t n) {
  if (k->fill) ncs_kstore_add(k->ks, x, n);
}

/* The file said it has no kernel activity: before any KERNEL, no call needs keeping. */
static void calls_stop(struct ncs_kact *k) {
  if (k->ks->n || k->calls_off) return;
  k->calls_off = 1;
  free_logs(k);
}
void ncs_kact_process(struct ncs_kact *k, const struct ncs_process *p) {
  struct ncs_kwatch w = {0};
  ncs_kwatch_process(&w, p);
  if (ncs_kwatch_off(&w)) calls_stop(k);
}

int ncs_kact_add_raw(struct ncs_kact *k, uint32_t type, const uint8_t *body, size_t len) {
  if (type == NCS_REC_KERNEL) {
    struct ncs_kernel x;
    struct ncs_rbuf r;
    if (ncs_dec_kernel(ncs_rbuf_on(&r, body, len), &x) != 0) { k->f.bad_records++; return 1; }
    ncs_kact_add_kernels(k, &x, 1);
    return 1;
  }
  if (type == NCS_REC_KERNEL_NAME) {
    struct ncs_kernel_name x;
    struct ncs_rbuf r;
    if (ncs_dec_kernel_name(ncs_rbuf_on(&r, body, len), &x) != 0) { k->f.bad_records++; return 1; }
    if (x.id >= NCS_KS_NAME_MAX) return 1; /* no kernel can name it (model/kstore.h) */
    if (ncs_grow((void **)&k->names, &k->capnames, k->nnames + 1, sizeof *k->names) != 0) return 1;
    x.name[sizeof x.name - 1] = 0;
    int nccl = x.kclass == NCS_KCLASS_NCCL || ncs_is_nccl_kernel(x.name); /* every NCCL kernel is communication */
    k->names[k->nnames++] = (struct kname){x.id, nccl ? op_of_kernel(k, x.name) : -1, nccl};
    if (nccl && x.kclass != NCS_KCLASS_NCCL) k->lift = 1;
    return 1;
  }
  if (type == NCS_REC_DEVCOMM) {
    if (ncs_devcomms_add(&k->f.dev, body, len) != 0) k->f.bad_records++;
    return 1;
  }
  if (type == NCS_REC_KERNEL_STATUS) {
    struct ncs_kernel_status x;
    struct ncs_rbuf r;
    if (ncs_dec_kernel_status(ncs_rbuf_on(&r, body, len), &x) != 0) { k->f.bad_records++; return 1; }
    k->f.state = (int)x.state;
    snprintf(k->f.reason, sizeof k->f.reason, "%s", x.reason);
    if (x.state != NCS_KSTATE_ON) calls_stop(k);
    return 1;
  }
  return 0;
}

static uint32_t size_hash(uint64_t S) { return (uint32_t)((S * 0x9e3779b97f4a7c15ull) >> 55) & (NSLOTS - 1); }

/* 1 + the size table's index of S (added when new), 0 when the table is full. */
static uint32_t size_code(struct ncs_kact *k, uint64_t S) {
  uint32_t i = size_hash(S);
  for (;; i = (i + 1) & (NSLOTS - 1)) {
    uint8_t x = k->size_slot[i];
    if (!x) break;
    if (k->sizes[x - 1] == S) return x;
  }
  if (k->nsizes == NSIZES) return 0;
  k->sizes[k->nsizes] = S;
  k->slot_size[i] = S;
  k->size_slot[i] = (uint8_t)++k->nsizes;
  return k->nsizes;
}

/* The next call of a log (the caller knows how many there are). */
static inline void clog_next(const struct ncs_kact *k, struct ncs_wlog_cur *c, uint64_t *S, uint64_t *t) {
  uint32_t esc[ESC_WORDS] = {0, 0};
  uint32_t code = ncs_wlog_next(c, ESC_WORDS, t, esc);
  *S = code ? k->sizes[code - 1] : (uint64_t)esc[0] | (uint64_t)esc[1] << 32;
}

/* The op slot of a call's operation, -1 when it has none (looked up once per operation: a name
 * lookup per call was a hot spot of report). */
static int call_slot(struct ncs_kact *k, uint32_t op) {
  int slot = k->call_slot[op] - 1;
  if (slot >= 0) return slot;
  const char *name = ncs_kernel_op_of_call(op);
  if (!name || (slot = op_slot(k, name, strlen(name))) < 0) return -1;
  k->call_slot[op] = (signed char)(slot + 1);
  return slot;
}

/* Appends a call to log l by the general path (a new block, a new size, a long gap); -1 when
 * out of memory. */
static int clog_add(struct ncs_kact *k, struct ncs_wlog *l, uint64_t S, uint64_t t) {
  uint32_t esc[ESC_WORDS] = {(uint32_t)S, (uint32_t)(S >> 32)};
  return ncs_wlog_put(l, t, size_code(k, S), esc, ESC_WORDS);
}

/* The calls of op from c on that each take one word (returned 0, no group or graph, datatype
 * dt, a size in its first hash slot, within 16.7 ms of the previous), appended at *at (room for
 * all up to stop); returns the first call that is not one (or stop). */
static inline __attribute__((always_inline)) const struct ncs_call *
add_words(const struct ncs_kact *k, const struct ncs_call *c, const struct ncs_call *stop, uint32_t op, uint32_t dt,
          uint64_t dsize, uint32_t **at, uint64_t *last) {
  uint32_t *w = *at;
  uint64_t prev = *last;
  for (; c < stop; c++) {
    if (c->op != op || c->datatype != dt || c->rc != 0 || (c->group | (c->flags & NCS_CALL_F_CAPTURED))) break;
    uint64_t S = c->count * dsize, t = c->t_enter, d = t - prev; /* ncs_rule_bytes */
    uint32_t i = size_hash(S);
    if (k->slot_size[i] != S || !ncs_wlog_fits(1, d)) break;
    *w++ = ncs_wlog_word(k->size_slot[i], d);
    prev = t;
  }
  *at = w;
  *last = prev;
  return c;
}

/* A run of calls of one operation at a time: the calls of one word go in by add_words, straight
 * into the log's last block (the common case: a few sizes, calls us to ms apart); the call that
 * stops it is skipped (an error), ends the op's sizing (a group or graph), changes the datatype,
 * or goes through clog_add (a new block, a new size, a long gap). */
__attribute__((noinline)) static void add_run(struct ncs_kact *k, const struct ncs_call *x, size_t n) {
  const struct ncs_call *c = x, *end = x + n;
  while (c < end) {
    uint32_t op = c->op;
    int slot = op < NCS_OP_LIMIT ? call_slot(k, op) : -1;
    if (slot < 0) { c++; continue; }
    struct ncs_kact_op *o = &k->f.op[slot];
    struct ncs_wlog *l = &k->calls[slot];
    uint32_t dt = c->datatype;
    uint64_t dsize = ncs_rule_dtype_size(dt);
    while (o->sized && c < end && c->op == op) {
      size_t room = (size_t)(l->end - l->at);
      uint32_t *at = l->at;
      c = add_words(k, c, (size_t)(end - c) < room ? end : c + room, op, dt, dsize, &at, &l->last_t);
      l->n += (uint64_t)(at - l->at);
      l->at = at;
      if (c == end || c->op != op) break;
      if (c->rc != 0) { c++; continue; }
      if (c->group || (c->flags & NCS_CALL_F_CAPTURED)) { o->sized = 0; break; } /* one kernel per group / graph */
      if (c->datatype != dt) { dsize = ncs_rule_dtype_size(dt = c->datatype); continue; }
      if (clog_add(k, l, c->count * dsize, c->t_enter) != 0) { o->sized = 0; break; }
      c++;
    }
    while (c < end && c->op == op) c++; /* the rest of the op's calls: not sized, nothing logged */
  }
}

/* One call as add_run takes it (a run of one: GPU-timed traces alternate CALL and GPU_TIME). */
static void add_call(struct ncs_kact *k, const struct ncs_call *c) {
  if (c->rc != 0 || c->op >= NCS_OP_LIMIT) return;
  int slot = call_slot(k, c->op);
  if (slot < 0) return;
  struct ncs_kact_op *o = &k->f.op[slot];
  if (!o->sized) return;
  if (c->group || (c->flags & NCS_CALL_F_CAPTURED)) { o->sized = 0; return; } /* one kernel per group / graph */
  struct ncs_wlog *l = &k->calls[slot];
  uint64_t S = ncs_rule_bytes(c->count, c->datatype), d = c->t_enter - l->last_t;
  uint32_t i = size_hash(S);
  if (k->slot_size[i] == S && ncs_wlog_fits(1, d) && l->at < l->end) {
    *l->at++ = ncs_wlog_word(k->size_slot[i], d);
    l->last_t = c->t_enter;
    l->n++;
    return;
  }
  if (clog_add(k, l, S, c->t_enter) != 0) o->sized = 0;
}

void ncs_kact_add_calls(struct ncs_kact *k, const struct ncs_call *x, size_t n) {
  if (k->calls_off) return;
  if (n == 1) add_call(k, x);
  else add_run(k, x, n);
}

static int bucket(uint64_t S) {
  int b = S ? 64 - __builtin_clzll(S) : 0; /* bits of S */
  return b < NCS_KACT_BUCKETS ? b : NCS_KACT_BUCKETS - 1;
}

/* The name table (struct nmap) of ids 0..max of the names, NULL (then name_of searches) when
 * an id is past NAME_TABLE or out of memory. */
static struct nmap *name_table(const struct ncs_kact *k, size_t *len) {
  uint32_t max = 0;
  for (size_t j = 0; j < k->nnames; j++) if (k->names[j].id > max) max = k->names[j].id;
  *len = k->nnames ? (size_t)max + 1 : 0;
  if (max >= NAME_TABLE) return NULL;
  struct nmap *t = calloc(*len ? *len : 1, sizeof *t);
  for (size_t j = 0; t && j < k->nnames; j++) {
    struct nmap *m = &t[k->names[j].id];
    if (!m->known) *m = (struct nmap){1, (signed char)k->names[j].op, (signed char)k->names[j].nccl, -1};
    if (m->op_any < 0 && k->names[j].op >= 0) m->op_any = (signed char)k->names[j].op;
  }
  return t;
}
static inline struct nmap name_of(const struct ncs_kact *k, const struct nmap *t, size_t len, uint32_t id) {
  if (t) return id < len ? t[id] : (struct nmap){0, -1, 0, -1};
  struct nmap m = {0, -1, 0, -1};
  for (size_t j = 0; j < k->nnames; j++)
    if (k->names[j].id == id) {
      if (!m.known) m = (struct nmap){1, (signed char)k->names[j].op, (signed char)k->names[j].nccl, -1};
      if (k->names[j].op >= 0) { m.op_any = (signed char)k->names[j].op; break; }
    }
  return m;
}
/* A kernel's class, NCCL for a kernel whose name is NCCL's though its record said compute (lift). */
static inline uint32_t class_of(const struct ncs_kact *k, const struct nmap *t, size_t len, const struct ncs_kstore_k *x) {
  uint32_t c = ncs_ks_class(x);
  return c == NCS_KCLASS_COMPUTE && k->lift && name_of(k, t, len, ncs_ks_name(x)).nccl ? NCS_KCLASS_NCCL : c;
}
/* A kernel's end, UINT64_MAX for one whose start + duration overflowed. */
static inline uint64_t end_of(const struct ncs_kstore_k *x) { return x->end < x->start ? UINT64_MAX : x->end; }

/* The ends of the kernels begun and not yet ended, in a min-heap by time: the sweep takes the
 * starts in order from the sorted kernels and the ends from here, so it holds only the kernels
 * running at once (edges at one moment may come in any order: they bound no segment). An NCCL
 * kernel's entry carries what its end completes (kernel_end): its length, the compute time
 * swept when it started (c0), its operation's slot and the size bucket and position in the step
 * its call gave (-1: none). */
struct kend { uint64_t t, len, c0; int comm; short op; signed char b, p; };
struct endheap { struct kend *h; size_t n, cap; };
static inline __attribute__((always_inline)) int end_push(struct endheap *q, struct kend x) {
  if (!q->n && q->cap) { q->h[0] = x; q->n = 1; return 0; } /* mostly: kernels one after another */
  if (q->n == q->cap && ncs_grow((void **)&q->h, &q->cap, q->n + 1, sizeof *q->h) != 0) return -1;
  size_t j = q->n++;
  while (j && x.t < q->h[(j - 1) / 2].t) { q->h[j] = q->h[(j - 1) / 2]; j = (j - 1) / 2; }
  q->h[j] = x;
  return 0;
}
static inline __attribute__((always_inline)) struct kend end_pop(struct endheap *q) {
  if (q->n == 1) { q->n = 0; return q->h[0]; }
  struct kend top = q->h[0], last = q->h[--q->n];
  size_t j = 0;
  for (;;) {
    size_t c = 2 * j + 1;
    if (c >= q->n) break;
    if (c + 1 < q->n && q->h[c + 1].t < q->h[c].t) c++;
    if (q->h[c].t >= last.t) break;
    q->h[j] = q->h[c];
    j = c;
  }
  if (q->n) q->h[j] = last;
  return top;
}

/* The step windows of ncs_kact_figures_each, one open at a time: window g is [t[g], t[g+1])
 * (the last, with one start, to the last kernel's end); the sweep's busy segments come in time
 * order, so a window is complete once a segment begins at or past its end, or the sweep ends,
 * and is handed to the sink then, in order. State: the open window alone. */
struct stepwin {
  const uint64_t *t;
  size_t n, nst, w;           /* starts, windows, the open window's index */
  uint64_t last;              /* the last kernel's end */
  struct ncs_kact_step cur;   /* the open window's figures */
  void (*sink)(void *ctx, size_t g, const struct ncs_kact_step *st);
  void *ctx;
};
static void win_open(struct stepwin *s) {
  size_t g = s->w;
  s->cur = (struct ncs_kact_step){.start_ns = s->t[g], .len_ns = (g + 1 < s->n ? s->t[g + 1] : s->last) - s->t[g]};
}
/* Hands the open window to the sink and opens the next (if any). */
static void win_close(struct stepwin *s) {
  struct ncs_kact_step *x = &s->cur;
  x->idle_ns = x->len_ns - x->compute_only_ns - x->overlapped_ns - x->exposed_ns;
  s->sink(s->ctx, s->w, x);
  if (++s->w < s->nst) win_open(s);
}

/* Adds the busy segment [a, b) in state (ncomp, ncomm) to the step windows it crosses (segments
 * come in time order: a window it starts past is complete). */
static void step_add(struct stepwin *s, uint64_t a, uint64_t b, long ncomp, long ncomm) {
  while (a < b && s->w < s->nst) {
    struct ncs_kact_step *x = &s->cur;
    uint64_t end = x->start_ns + x->len_ns;
    if (a >= end) { win_close(s); continue; }
    if (a < x->start_ns) { a = x->start_ns < b ? x->start_ns : b; continue; }
    uint64_t e = b < end ? b : end;
    if (ncomp && ncomm) x->overlapped_ns += e - a;
    else if (ncomp) x->compute_only_ns += e - a;
    else x->exposed_ns += e - a;
    a = e;
  }
}

/* The step (index into t) a host time falls in, -1 before the first start or at/after the
 * last one when it closes the last complete step. *hint: where the previous lookup ended; when
 * t is sorted (`sorted`) and x falls at it or the next start, as it mostly does (calls come in
 * time order), no search: the same answer, the last start <= x. */
static long step_of_slow(const uint64_t *t, size_t n, size_t nst, uint64_t x, int sorted, size_t *hint) {
  if (!n || x < t[0]) return -1;
  size_t lo = 0, hi = n; /* last start <= x */
  size_t h = *hint;
  if (sorted && h < n && t[h] <= x && (h + 1 == n || t[h + 1] > x)) lo = h;
  else if (sorted && h + 1 < n && t[h + 1] <= x && (h + 2 == n || t[h + 2] > x)) lo = h + 1;
  else
    while (hi - lo > 1) { size_t mid = (lo + hi) / 2; if (t[mid] <= x) lo = mid; else hi = mid; }
  *hint = lo;
  return lo < nst ? (long)lo : -1;
}

/* step_of_slow, inline where x falls in the hint's step or the next, as it mostly does (one step
 * per call, a few calls a step): the same answer. */
static inline __attribute__((always_inline)) long step_of(const uint64_t *t, size_t n, size_t nst, uint64_t x, int sorted, size_t *hint) {
  size_t h = *hint;
  if (sorted && h + 2 < n && t[h] <= x && t[h + 2] > x) {
    if (t[h + 1] <= x) *hint = ++h;
    return h < nst ? (long)h : -1;
  }
  return step_of_slow(t, n, nst, x, sorted, hint);
}

/* The sweep's state for what each kernel adds (kernel_start, kernel_end). */
struct sweep {
  struct ncs_kact *k;
  const struct nmap *tab;
  size_t ntab;
  const uint64_t *t;                    /* the step starts [n], nst windows */
  size_t n, nst;
  int sorted;                           /* t increasing */
  uint64_t last;                        /* the latest end so far */
  size_t nk_op[NCS_KACT_MAX_OPS];       /* NCCL kernels per op (op_any: see struct nmap) */
  size_t seen[NCS_KACT_MAX_OPS];        /* calls paired per op */
  size_t hint[NCS_KACT_MAX_OPS];        /* step_of's, per op */
  long pos_step[NCS_KACT_MAX_OPS], pos_at[NCS_KACT_MAX_OPS]; /* per op: the step of its last sized call, its position */
  struct ncs_wlog_cur cur[NCS_KACT_MAX_OPS];
};

/* An NCCL kernel of op o (sized, a call left) takes the op's next call: the call's size bucket
 * *b and position in its step *p (left as they are without a step) and their counts. */
static inline __attribute__((always_inline)) void take_call(struct sweep *w, struct ncs_kact_op *op, int o,
                                                            signed char *b, signed char *p) {
  uint64_t S, ct;
  clog_next(w->k, &w->cur[o], &S, &ct);
  w->seen[o]++;
  int bk = bucket(S);
  *b = (signed char)bk;
  op->size_kernels[bk]++;
  long g = step_of(w->t, w->n, w->nst, ct, w->sorted, &w->hint[o]);
  if (g >= 0) {
    if (g != w->pos_step[o]) { w->pos_step[o] = g; w->pos_at[o] = 0; }
    int q = w->pos_at[o] < NCS_KACT_POS - 1 ? (int)w->pos_at[o] : NCS_KACT_POS - 1;
    w->pos_at[o]++;
    if (!op->pos_kernels[q] || S < op->pos_bytes_min[q]) op->pos_bytes_min[q] = S;
    if (S > op->pos_bytes_max[q]) op->pos_bytes_max[q] = S;
    op->pos_kernels[q]++;
    if (q + 1 > op->npos) op->npos = q + 1;
    *p = (signed char)q;
  }
}

/* Kernel x, as the sweep takes its start (in index order; c0: the compute time swept by then):
 * its counts, and for an NCCL kernel its operation's kernel count and its call (the i-th NCCL
 * kernel of an op takes the op's i-th call: its size bucket and position in the step, the
 * counts and the bytes here, the times at its end); returns its end's heap entry. */
static inline __attribute__((always_inline)) struct kend kernel_start(struct sweep *w, const struct ncs_kstore_k *x, uint64_t c0) {
  struct ncs_kact *k = w->k;
  struct ncs_kact_fig *f = &k->f;
  uint32_t cls = class_of(k, w->tab, w->ntab, x); /* a kernel named as NCCL's is communication, whatever its record said */
  uint64_t xs = x->start, xe = end_of(x);
  struct kend e = {xe, xe > xs ? xe - xs : 0, c0, cls == NCS_KCLASS_NCCL, -1, -1, -1};
  if (xe > w->last) w->last = xe;
  if (!e.comm) {
    if (cls != NCS_KCLASS_COMPUTE) f->copies++;
    else {
      f->kernels++;
      if (f->dev.n && ncs_devcomms_cover(&f->dev, xs)) {
        f->devapi_kernels++;
        f->devapi_ns += xe - xs;
      }
    }
    return e;
  }
  f->nccl_kernels++;
  struct nmap m = name_of(k, w->tab, w->ntab, ncs_ks_name(x));
  if (m.op_any >= 0) w->nk_op[m.op_any]++;
  int o = m.op;
  if (o < 0) o = op_slot(k, "unnamed", 7);
  if (o < 0) return e;
  e.op = (short)o;
  struct ncs_kact_op *op = &f->op[o];
  op->kernels++;
  if (op->sized && w->seen[o] < k->calls[o].n) take_call(w, op, o, &e.b, &e.p);
  return e;
}
/* An NCCL kernel's end (c1: the compute time swept by then): its length and exposed part (the
 * length less the compute time inside it, c1 - c0: its overlap with the union of compute) to
 * its operation, size and position. */
static inline __attribute__((always_inline)) void kernel_end(struct ncs_kact_fig *f, const struct kend *e, uint64_t c1) {
  if (e->op < 0) return;
  struct ncs_kact_op *op = &f->op[e->op];
  uint64_t len = e->len, exposed = len - (c1 - e->c0);
  op->time_ns += len;
  op->exposed_ns += exposed;
  if (e->b >= 0) {
    op->size_time_ns[e->b] += len;
    op->size_exposed_ns[e->b] += exposed;
  }
  if (e->p >= 0) {
    op->pos_time_ns[e->p] += len;
    op->pos_exposed_ns[e->p] += exposed;
  }
}

/* The alone loop's NCCL kernels from kk[i] on while each has `info` (the kernel just taken
 * has it: so its op o, op_any, and class), a length, and runs alone (the next starts at or
 * after its end): per kernel, its call (take_call's rule) with its size's and position's time
 * and exposed time (all of its length: nothing runs beside it) and its step windows; the counts,
 * op sums, idle gaps and the latest end, whole-number sums whatever their order, added once.
 * *tt: the sweep's time (the last end). Returns the first kernel not taken. What repeats from
 * kernel to kernel lives in locals for the chain, stored back at its end: the op's call cursor,
 * calls taken, step hint and position; the last one-word size code's size and bucket; the size
 * bucket's kernels and time while consecutive kernels share it; the open step window's bounds
 * and the exposed time added to it (stores to the op's arrays would reload them from memory). */
static size_t comm_chain(struct sweep *w, struct stepwin *win, const struct ncs_kstore_k *kk, size_t i, size_t nk,
                         uint32_t info, int o, int o_any, uint64_t *tt) {
  const struct ncs_kact *k = w->k;
  struct ncs_kact_fig *f = &w->k->f;
  struct ncs_kact_op *op = &f->op[o];
  size_t ncalls = op->sized ? k->calls[o].n : 0, i0 = i, nst = w->nst;
  struct ncs_wlog_cur cur = w->cur[o];
  size_t seen = w->seen[o], hint = w->hint[o];
  long pstep = w->pos_step[o], pat = w->pos_at[o];
  int npos = op->npos;
  const uint64_t *st = w->t;
  size_t nt = w->n;
  int sorted = w->sorted;
  uint32_t lcode = 0;          /* the last one-word code (0: none yet), its size and bucket */
  uint64_t lS = 0;
  int lb = 0;
  int rb = -1;                 /* the bucket of the kernels rn, rlen: added at a change, and at the end */
  uint64_t rn = 0, rlen = 0;
  int open = win->w < nst;     /* the open window [ws, we) and the exposed time ex added to it */
  uint64_t ws = open ? win->cur.start_ns : 0, we = open ? ws + win->cur.len_ns : 0, ex = 0;
  uint64_t t = *tt, gap = 0, sum = 0;
  for (; i < nk && kk[i].info == info; i++) {
    uint64_t ys = kk[i].start, ye = end_of(&kk[i]);
    if (ye <= ys || (i + 1 < nk && kk[i + 1].start < ye)) break;
    uint64_t len = ye - ys;
    gap += ys - t;
    sum += len;
    t = ye;
    if (seen < ncalls) { /* take_call, in locals */
      uint32_t esc[ESC_WORDS] = {0, 0};
      uint64_t ct, S;
      uint32_t code = ncs_wlog_next(&cur, ESC_WORDS, &ct, esc);
      int bk;
      if (code && code == lcode) S = lS, bk = lb;
      else {
        S = code ? k->sizes[code - 1] : (uint64_t)esc[0] | (uint64_t)esc[1] << 32;
        bk = bucket(S);
        if (code) lcode = code, lS = S, lb = bk;
      }
      seen++;
      if (bk != rb) {
        if (rb >= 0) {
          op->size_kernels[rb] += rn;
          op->size_time_ns[rb] += rlen;
          op->size_exposed_ns[rb] += rlen;
        }
        rb = bk, rn = 0, rlen = 0;
      }
      rn++;
      rlen += len;
      long g = step_of(st, nt, nst, ct, sorted, &hint);
      if (g >= 0) {
        if (g != pstep) pstep = g, pat = 0;
        int q = pat < NCS_KACT_POS - 1 ? (int)pat : NCS_KACT_POS - 1;
        pat++;
        if (!op->pos_kernels[q] || S < op->pos_bytes_min[q]) op->pos_bytes_min[q] = S;
        if (S > op->pos_bytes_max[q]) op->pos_bytes_max[q] = S;
        op->pos_kernels[q]++;
        if (q + 1 > npos) npos = q + 1;
        op->pos_time_ns[q] += len;
        op->pos_exposed_ns[q] += len;
      }
    }
    /* step_add(win, ys, ye, 0, 1) in line while the kernel starts at or past the open window's
     * start (its parts in each window it crosses, the windows it passes closed) */
    for (uint64_t a = ys; a < ye && open;) {
      if (a >= we || a < ws) { /* a window to close, or one the kernel starts before: as step_add */
        int before = a < we; /* (a window that ends at or before a closes first, as in step_add) */
        win->cur.exposed_ns += ex;
        ex = 0;
        if (before) step_add(win, a, ye, 0, 1);
        else win_close(win);
        open = win->w < nst;
        if (open) ws = win->cur.start_ns, we = ws + win->cur.len_ns;
        if (before) break;
        continue;
      }
      uint64_t e = ye < we ? ye : we;
      ex += e - a;
      a = e;
    }
  }
  if (open) win->cur.exposed_ns += ex;
  if (rb >= 0) {
    op->size_kernels[rb] += rn;
    op->size_time_ns[rb] += rlen;
    op->size_exposed_ns[rb] += rlen;
  }
  w->cur[o] = cur;
  w->seen[o] = seen;
  w->hint[o] = hint;
  w->pos_step[o] = pstep;
  w->pos_at[o] = pat;
  op->npos = npos;
  size_t m = i - i0;
  f->nccl_kernels += m;
  if (o_any >= 0) w->nk_op[o_any] += m;
  op->kernels += m;
  op->time_ns += sum;
  op->exposed_ns += sum;
  f->exposed_ns += sum;
  f->idle_ns += gap;
  if (t > w->last) w->last = t;
  *tt = t;
  return i;
}

int ncs_kact_figures_each(struct ncs_kact *k, struct ncs_kact_fig *out, const uint64_t *t, size_t n,
                          void (*on_step)(void *ctx, size_t g, const struct ncs_kact_step *st), void *ctx) {
  struct ncs_kact_fig *f = &k->f;
  struct ncs_kstore *ks = k->ks;
  f->bad_records += ks->bad;
  ks->bad = 0;
  f->have = ks->n > 0;
  if (!ks->n) { *out = *f; return 0; }
  ncs_kstore_sort(ks); /* by (start, end); read-only from here: others read it after */
  const struct ncs_kstore_k *kk = ks->k;
  size_t nk = ks->n;
  struct sweep w = {.k = k, .t = t, .n = n};
  struct nmap *tab = name_table(k, &w.ntab);
  w.tab = tab;
  struct endheap ends = {0};
  uint64_t first = kk[0].start;
  /* step windows: [t[g], t[g+1]); one start: to the last kernel's end (found first, then) */
  struct stepwin win = {t, n, 0, 0, 0, {0}, on_step, ctx};
  if (on_step && t && n) {
    if (n == 1)
      for (size_t i = 0; i < nk; i++) if (end_of(&kk[i]) > win.last) win.last = end_of(&kk[i]);
    w.nst = win.nst = n > 1 ? n - 1 : (win.last > t[0] ? 1 : 0);
    if (w.nst) win_open(&win);
  }
  size_t nst = w.nst;
  w.sorted = 1;
  for (size_t g = 1; g < n && w.sorted; g++) w.sorted = t[g - 1] <= t[g];
  /* the calls are paired as the kernels start; an op whose NCCL kernels and calls turn out not
   * as many is not sized after all (its sizes and positions cleared below) */
  int nops = f->nops; /* (an "unnamed" op the sweep adds has no calls) */
  for (int o = 0; o < NCS_KACT_MAX_OPS; o++) w.pos_step[o] = -1;
  for (int o = 0; o < nops; o++) {
    ncs_wlog_seal(&k->calls[o]);
    ncs_wlog_begin(&k->calls[o], &w.cur[o]);
  }
  /* one sweep over the edges: the partition, the step windows, each kernel's counts and call,
   * each NCCL kernel's exposed part */
  long ncomp = 0, ncomm = 0;
  uint64_t tt = first;
  size_t i = 0; /* the next kernel to start */
  for (;;) {
    for (; i < nk && end_of(&kk[i]) <= kk[i].start; i++) { /* no length: no edge; counted, its call taken */
      struct kend e = kernel_start(&w, &kk[i], 0);
      kernel_end(f, &e, 0);
    }
    if (!ends.n && i < nk && (i + 1 == nk || kk[i + 1].start >= end_of(&kk[i]))) {
      /* kernel i runs alone (nothing running as it starts, the next starting at or after its
       * end): the idle gap before it and its own segment straight, no heap */
      do {
        const struct ncs_kstore_k *y = &kk[i++];
        uint64_t ys = y->start, ye = end_of(y), c = f->compute_only_ns + f->overlapped_ns;
        f->idle_ns += ys - tt;
        struct kend x = kernel_start(&w, y, c);
        if (x.comm) f->exposed_ns += ye - ys;
        else f->compute_only_ns += ye - ys;
        if (nst && ye != ys) step_add(&win, ys, ye, !x.comm, x.comm);
        tt = ye;
        kernel_end(f, &x, x.comm ? c : c + (ye - ys));
        if (x.comm && x.op >= 0 && i < nk && kk[i].info == y->info) /* NCCL kernels of its name after it */
          i = comm_chain(&w, &win, kk, i, nk, y->info, x.op, name_of(k, tab, w.ntab, ncs_ks_name(y)).op_any, &tt);
        /* and the next, while it has a length and runs alone too (the loop's tests, in its order) */
      } while (i < nk && end_of(&kk[i]) > kk[i].start && (i + 1 == nk || kk[i + 1].start >= end_of(&kk[i])));
      continue;
    }
    uint64_t at;
    struct kend x;
    int start;
    /* an end at the next start's moment goes first (edges at one moment bound no segment): kernels
     * back to back empty the heap at each, and the next runs alone again (the alone loop, comm_chain);
     * taken the other way round, one overlap kept a kernel in the heap for the rest of the file */
    if (ends.n && (i == nk || ends.h[0].t <= kk[i].start)) x = end_pop(&ends), at = x.t, start = 0;
    else if (i < nk) at = kk[i].start, start = 1;
    else break;
    uint64_t dt = at - tt;
    if (ncomp && ncomm) f->overlapped_ns += dt;
    else if (ncomp) f->compute_only_ns += dt;
    else if (ncomm) f->exposed_ns += dt;
    else f->idle_ns += dt;
    if (nst && dt && (ncomp || ncomm)) step_add(&win, tt, at, ncomp, ncomm);
    tt = at;
    uint64_t c = f->compute_only_ns + f->overlapped_ns; /* compute swept by `at` */
    if (start) {
      x = kernel_start(&w, &kk[i++], c);
      if (end_push(&ends, x) != 0) { free(ends.h); free(tab); return -1; }
      if (x.comm) ncomm++; else ncomp++;
    } else {
      kernel_end(f, &x, c);
      if (x.comm) ncomm--; else ncomp--;
    }
  }
  free(ends.h);
  free(tab);
  while (win.w < nst) win_close(&win); /* the windows the sweep did not pass */
  f->kernels += f->nccl_kernels; /* kernels: compute and NCCL kernels (copies apart) */
  f->first_ns = first;
  f->span_ns = w.last - first;
  f->busy_ns = f->compute_only_ns + f->overlapped_ns + f->exposed_ns;
  f->compute_ns = f->compute_only_ns + f->overlapped_ns;
  f->comm_ns = f->exposed_ns + f->overlapped_ns;
  for (int o = 0; o < nops; o++) {
    struct ncs_kact_op *op = &f->op[o];
    if (w.nk_op[o] == k->calls[o].n && !k->calls_off) continue; /* calls_off: kernels after all */
    op->sized = 0;
    op->npos = 0;
    memset(op->size_kernels, 0, sizeof op->size_kernels);
    memset(op->size_time_ns, 0, sizeof op->size_time_ns);
    memset(op->size_exposed_ns, 0, sizeof op->size_exposed_ns);
    memset(op->pos_kernels, 0, sizeof op->pos_kernels);
    memset(op->pos_time_ns, 0, sizeof op->pos_time_ns);
    memset(op->pos_exposed_ns, 0, sizeof op->pos_exposed_ns);
    memset(op->pos_bytes_min, 0, sizeof op->pos_bytes_min);
    memset(op->pos_bytes_max, 0, sizeof op->pos_bytes_max);
  }
  *out = *f;
  return 0;
}

/* ncs_kact_figures' array of steps: each window the sweep hands over, at its index. */
struct step_array { struct ncs_kact_step *st; size_t n; };
static void to_array(void *ctx, size_t g, const struct ncs_kact_step *x) {
  struct step_array *a = ctx;
  a->st[g] = *x;
  a->n = g + 1;
}
int ncs_kact_figures(struct ncs_kact *k, struct ncs_kact_fig *out, const uint64_t *t, size_t n,
                     struct ncs_kact_step *steps, size_t *nsteps) {
  struct step_array a = {steps, 0};
  int rc = ncs_kact_figures_each(k, out, t, n, steps && nsteps ? to_array : NULL, &a);
  if (nsteps) *nsteps = a.n;
  return rc;
}

const char *ncs_kact_why_none(const struct ncs_kact_fig *f) {
  if (f->state >= 0 && f->reason[0]) return f->reason;
  return "no KERNEL records: a trace older than format 1.1, or no CUDA runtime in the job";
}

double ncs_kact_compute_to_comm(const struct ncs_kact_fig *f, double wall_ns, double comm_ns, int *estimate) {
  if (f && f->have && f->span_ns) {
    if (estimate) *estimate = 0;
    return f->comm_ns ? (double)f->compute_ns / (double)f->comm_ns : NAN;
  }
  if (estimate) *estimate = 1;
  return comm_ns > 0 ? (wall_ns - comm_ns) / comm_ns : NAN;
}

const char *ncs_kact_verdict(const struct ncs_kact_fig *f) {
  if (!f->have || !f->span_ns) return "no kernel activity";
  double span = (double)f->span_ns, exposed = (double)f->exposed_ns / span, idle = (double)f->idle_ns / span;
  if (exposed >= 0.5) return "communication-bound";
  if (idle >= 0.25) return "gpu-idle";
  if (exposed >= 0.25) return "communication-heavy";
  return "compute-bound";
}
