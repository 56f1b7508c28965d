/* trace.c — the trace reader (trace.h): one file, chunk by chunk, every check of FORMAT.md.
 *
 * Contract: see trace.h. Per open trace: its position, status and the PROCESS record's copy
 * (and a FILE while not parked). Per set of buffers (one per thread): two buffers sized to
 * the largest chunk seen (at most 64 MiB each by the format's limits), one scratch area for
 * NUL-terminated strings, one zstd DCtx, and for column chunks their decompressed columns, the
 * column cursor and a block of CALL, of GPU_TIME and of KERNEL structs (column chunks are read
 * without rebuilding their rows: columns.h; a run of KERNEL records goes to `kernels` with no
 * raw[], trace.h), handed to a visitor with `stretch` straight from those blocks, with the
 * interleaving in a buffer of two blocks' bytes. Nothing grows with the number of chunks or
 * records. Every length and varint is checked against the bytes that hold it. */
#include "io/trace.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "ncclscope/columns.h"
#include "ncclscope/encode.h"
#include "ncclscope/format.h"
#include "io/readcount.h"
#include "io/recover.h"
#include "io/regfile.h"

/* The longest run of CALL records a row chunk hands a run visitor at once. */
#define NCS_ROW_RUN 256 /* as a column block (NCS_COLR_BLOCK): visitors take runs that long already */

/* Decoding buffers and the zstd context: one set per thread, shared by the files it reads. */
struct ncs_trace_bufs {
  ZSTD_DCtx *dctx;
  uint8_t *payload, *raw, *scratch, *cols;
  size_t payload_cap, raw_cap, scratch_cap, cols_cap;
  struct ncs_colrd colrd; /* a column chunk being read (columns.h) */
  struct ncs_call calls[NCS_COLR_BLOCK];       /* its block of split CALL records */
  struct ncs_gpu_time gpu_times[NCS_COLR_BLOCK]; /* and of GPU_TIME records */
  struct ncs_kernel kernels[NCS_COLR_BLOCK];   /* and of KERNEL records (a visitor's `kernels`) */
  struct ncs_decv_memo calls_memo, gpu_times_memo, kernels_memo; /* what those hold (encode.h) */
  uint8_t order[2 * NCS_COLR_BLOCK];           /* a stretch's interleaving (trace.h) */
  struct ncs_call row_calls[NCS_ROW_RUN];      /* a row chunk's CALL records gathered into a run */
  struct ncs_kernel row_kernels[NCS_KERNEL_RUN]; /* and its KERNEL records (visitor's `kernels`), */
  struct ncs_raw row_kraw[NCS_KERNEL_RUN];       /* as decoded and as stored */
};

/* One open trace (struct ncs_trace in trace.h): position, status and PROCESS record. */
struct reader {
  const char *path;
  FILE *f;                /* NULL while parked */
  const struct ncs_visitor *v;
  struct ncs_read_status *st;
  struct ncs_trace_bufs *b; /* the buffers of the ncs_trace_next call in progress */
  struct ncs_process proc;
  uint8_t *kv_store;      /* the PROCESS record's pairs and strings, kept for the whole read */
  size_t kv_cap;
  uint64_t chunk_off;     /* byte offset of the chunk being read */
  int have_process;
  int done, ret;          /* the read is over; its result (ncs_trace_read's) */
  uint8_t *open_comm;     /* [open_cap] 1 while communicator index i is created and not ended */
  size_t open_cap;
  uint32_t comms_seen;    /* communicators created */
  int bounded;            /* a bounded file (5.2, NCCLSCOPE_KEEP): read from its first kept chunk */
  uint64_t next_index;    /* the index of the chunk after the last good one */
};
#define OPEN_COMM_MAX (1u << 20) /* indexes beyond are not tracked (the shim makes at most 4096) */

/* Completeness: which communicators are open (COMM with a handle, until its COMM_END). */
static void track_comm(struct reader *r, uint32_t idx, int open) {
  if (idx >= OPEN_COMM_MAX) return;
  if (idx >= r->open_cap) {
    if (!open) return;
    size_t nc = r->open_cap ? r->open_cap : 64;
    while (nc <= idx) nc *= 2;
    uint8_t *n = realloc(r->open_comm, nc);
    if (!n) return;
    memset(n + r->open_cap, 0, nc - r->open_cap);
    r->open_comm = n;
    r->open_cap = nc;
  }
  if (open && !r->open_comm[idx]) { r->open_comm[idx] = 1; r->st->comms_open++; r->comms_seen++; }
  else if (!open && r->open_comm[idx]) { r->open_comm[idx] = 0; r->st->comms_open--; }
}
struct ncs_trace { struct reader r; };

static void set_error(struct reader *r, uint64_t off, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  r->st->error_offset = off;
  snprintf(r->st->error, sizeof r->st->error, "%s: offset %llu: %s", r->path,
           (unsigned long long)off, what);
}

static int grow(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 4096;
  while (n < need) n *= 2;
  uint8_t *p = realloc(*buf, n);
  if (!p) return -1;
  *buf = p;
  *cap = n;
  return 0;
}

/* Reads exactly n bytes; returns the count actually read (short at end of file). */
static size_t read_full(FILE *f, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    size_t k = fread((uint8_t *)buf + got, 1, n - got, f);
    if (k == 0) break;
    got += k;
  }
  return got;
}

/* Decodes a body with strings or arrays into the scratch area *buf (grown as needed). */
#define DECODE_WITH_SCRATCH_(rb, buf, cap, body, len, call) \
  for (;;) { \
    if (grow(buf, cap, 2 * (len) + 16)) return -2; \
    ncs_rbuf_init(&rb, body, len, *(buf), *(cap)); \
    if ((call) == 0) break; \
    if (!rb.full) return -1; \
    if (*(cap) > 64 * (size_t)(len) + 4096 || grow(buf, cap, 2 * *(cap))) return -2; \
  }

static int decode_process(struct reader *r, const uint8_t *body, size_t len) {
  struct ncs_rbuf rb;
  struct ncs_process_kv pk;
  r->have_process = 0;
  r->proc.kv = NULL; /* the store may move */
  r->proc.nkv = 0;
  DECODE_WITH_SCRATCH_(rb, &r->kv_store, &r->kv_cap, body, len, ncs_dec_process_kv(&rb, &pk))
  r->proc.kv = pk.kv;
  r->proc.nkv = pk.nkv;
  r->have_process = 1;
  return 0;
}

/* 1 when the file is of format 5.4 or later: COMM's name and color and MODULE's build_id are
 * read only from such files (docs/FORMAT.md "Versions"). */
static inline int since_5_4(const struct reader *r) {
  return r->proc.major > 5 || (r->proc.major == 5 && r->proc.minor >= 4);
}

/* What the reader itself keeps of a record it decoded, before its visitor sees it (type is a
 * constant wherever this is inlined, so the switch folds away): which communicators are open
 * (completeness), the last CLOCK pair (the process's last sign of life), and the fields a file
 * older than 5.4 does not have. */
static inline __attribute__((always_inline)) void reader_note(struct reader *r, uint32_t type, void *rec) {
  switch (type) {
  case NCS_REC_COMM: {
    struct ncs_comm *x = rec;
    if (!since_5_4(r)) { x->name[0] = 0; x->color = -1; } /* name and color: 5.4 fields */
    if (x->handle) track_comm(r, x->comm, 1);
    break;
  }
  case NCS_REC_COMM_END:
    track_comm(r, ((struct ncs_comm_end *)rec)->comm, 0);
    break;
  case NCS_REC_CLOCK:
    r->st->last_realtime_ns = ((struct ncs_clock *)rec)->realtime_ns;
    r->st->last_monotonic_ns = ((struct ncs_clock *)rec)->monotonic_ns;
    break;
  case NCS_REC_MODULE:
    if (!since_5_4(r)) ((struct ncs_module *)rec)->build_id[0] = 0; /* build_id: a 5.4 field */
    break;
  default:
    break;
  }
}

/* A KERNEL record's body into *k: 0, or -1 when it does not decode (out of line: the walks'
 * CALL decoding is what must stay in line). */
static __attribute__((noinline)) int dec_kernel(const uint8_t *body, size_t len, struct ncs_kernel *k) {
  struct ncs_rbuf rb;
  return ncs_dec_kernel(ncs_rbuf_on(&rb, body, len), k) != 0 ? -1 : 0;
}
/* The same for a row of a chunk's rows that end at `end`: ncs_dec_kernel_fast where the rows
 * leave it room, else dec_kernel. */
static inline int dec_kernel_row(const uint8_t *body, size_t len, const uint8_t *end, struct ncs_kernel *k) {
  if (len < 128 && (size_t)(end - body) >= NCS_KERNEL_FAST_READ && ncs_dec_kernel_fast(body, body + len, k) == 0) return 0;
  return dec_kernel(body, len, k);
}

/* Decodes one record and calls its visitor. Returns 0, 1 to stop, -1 on a malformed body,
 * -2 when out of memory. Inlined into both walks (the row walk's speed depends on it). Its
 * cases are expanded from NCS_RECORDS by READ and STATE (ncclscope/records.h): a VISIT record
 * is decoded (a DELTA one against the chunk's delta state, without scratch) and handed to its
 * callback, a RAW one falls to `default`. */
static inline __attribute__((always_inline)) int dispatch(struct reader *r, uint32_t type, const uint8_t *body, size_t len,
                    struct ncs_call_delta *delta) {
  const struct ncs_visitor *v = r->v;
  struct ncs_trace_bufs *b = r->b;
  struct ncs_rbuf rb;
  (void)b;
  switch (type) {
#define DISPATCH_(T, name, st, rd) DISPATCH_##rd##_##st(T, name)
#define DISPATCH_VISIT_DELTA(T, name) \
  case NCS_REC_##T: { \
    struct ncs_##name x; \
    ncs_rbuf_init(&rb, body, len, NULL, 0); \
    if (ncs_dec_##name(&rb, delta, &x)) return -1; \
    reader_note(r, NCS_REC_##T, &x); \
    if (v->name##s) return v->name##s(v->ctx, &x, 1) != 0; \
    return v->name ? (v->name(v->ctx, &x) != 0) : 0; \
  }
#define DISPATCH_VISIT_PLAIN(T, name) \
  case NCS_REC_##T: { \
    struct ncs_##name x; \
    DECODE_WITH_SCRATCH_(rb, &b->scratch, &b->scratch_cap, body, len, ncs_dec_##name(&rb, &x)) \
    reader_note(r, NCS_REC_##T, &x); \
    return v->name ? (v->name(v->ctx, &x) != 0) : 0; \
  }
#define DISPATCH_PROCESS_PLAIN(T, name) \
  case NCS_REC_##T: { \
    int e = decode_process(r, body, len); \
    if (e) return e; \
    return v->process ? (v->process(v->ctx, &r->proc) != 0) : 0; \
  }
#define DISPATCH_RAW_PLAIN(T, name)
  NCS_RECORDS(DISPATCH_)
#undef DISPATCH_
#undef DISPATCH_VISIT_DELTA
#undef DISPATCH_VISIT_PLAIN
#undef DISPATCH_PROCESS_PLAIN
#undef DISPATCH_RAW_PLAIN
  case NCS_REC_CALL_RUN: /* only walk_records reads one: this one is in a column payload */
    return -1;
  default: {
    struct ncs_raw raw = {type, body, len};
    if (type == NCS_REC_KERNEL && v->kernels) { /* a run of one (walk_records gathers longer ones; walk_columns
                                                   takes a column chunk's split ones before this) */
      struct ncs_kernel k;
      if (dec_kernel(body, len, &k) == 0) return v->kernels(v->ctx, &k, &raw, 1) != 0;
    }
    return v->raw ? (v->raw(v->ctx, &raw) != 0) : 0;
  }
  }
}

/* A record that did not decode (dispatch's rc < 0): the error, and -1. raw_at: its offset in
 * the chunk's rows (SIZE_MAX: a column chunk, whose rows are not rebuilt). */
static int record_failed(struct reader *r, int rc, uint64_t index, uint32_t k, uint64_t type, size_t raw_at) {
  if (rc == -2)
    set_error(r, r->chunk_off, "chunk %llu: out of memory", (unsigned long long)index);
  else if (raw_at == SIZE_MAX)
    set_error(r, r->chunk_off, "chunk %llu: record %u (type %llu): malformed body", (unsigned long long)index, k,
              (unsigned long long)type);
  else
    set_error(r, r->chunk_off, "chunk %llu: record %u (type %llu) at raw byte %zu: malformed body",
              (unsigned long long)index, k, (unsigned long long)type, raw_at);
  return -1;
}

/* The end of a chunk's records: 0 when there were as many as its header states, else -1. */
static int count_check(struct reader *r, uint64_t index, uint32_t k, uint32_t nrec) {
  if (k == nrec) return 0;
  set_error(r, r->chunk_off, "chunk %llu: %u records, its header states %u", (unsigned long long)index, k, nrec);
  return -1;
}

/* Walks the records of one decompressed chunk. Returns 0, 1 stopped, -1 damage (error set).
 * For a visitor with `calls`, consecutive CALL records are decoded into b->row_calls and
 * handed over as one run (up to NCS_ROW_RUN) before the next other record, error or end:
 * the records visited, in order, are those of a record-by-record walk. */
/* (walk_records) the gathered run to the visitor; returns 1 from walk_records if it stops */
#define FLUSH_ROW_RUN_() \
  if (nrun) { \
    int s_ = v->calls(v->ctx, run, nrun) != 0; \
    r->st->records += nrun; \
    nrun = 0; \
    if (s_) return 1; \
  }
/* (walk_records) the CALL records at *p, up to `max` of them, decoded into x[] by
 * ncs_dec_call_fast while each has a one-byte length, lies far enough from `end` for it
 * (NCS_CALL_FAST_READ) and is answered by it; returns how many, *p moved past them and *last
 * at the last one's first byte. */
static __attribute__((noinline)) uint32_t row_calls_fast(const uint8_t **pp, const uint8_t *end,
                                                          struct ncs_call_delta *d, struct ncs_call *x, uint32_t max,
                                                          const uint8_t **last) {
  const uint8_t *p = *pp, *l = *last;
  struct ncs_call *x0 = x, *xend = x + max;
  while (x < xend && end - p >= 2 + NCS_CALL_FAST_READ) {
    /* each record taken is at most 129 bytes (type, one-byte length, body), so the next
     * `room` of them start far enough from the end */
    size_t room = (size_t)(end - p - (2 + NCS_CALL_FAST_READ)) / 129 + 1;
    struct ncs_call *stop = (size_t)(xend - x) < room ? xend : x + room;
    for (; x < stop; x++) {
      /* a CALL with a one-byte length: its first two bytes, low byte first, are 0x05 and < 0x80 */
      if (((p[0] | (unsigned)p[1] << 8) & 0x80ffu) != NCS_REC_CALL) goto out;
      const uint8_t *e = p + 2 + p[1];
      if (ncs_dec_call_fast(p + 2, e, d, x)) goto out;
      l = p;
      p = e;
    }
  }
out:
  *pp = p;
  *last = l;
  return (uint32_t)(x - x0);
}

/* (walk_records) the KERNEL record whose body is at *pp (len bytes) and those right after it,
 * up to NCS_KERNEL_RUN and the chunk's record count (*k records taken of nrec), decoded and
 * handed to the visitor's `kernels` as one run; the run ends before a record that is not a
 * KERNEL with a one-byte type and length, or does not decode (walk_records reads it as any
 * other). *pp, *k and the status' record count moved past the run. Returns -1 when the first
 * does not decode (nothing taken: it goes to `raw`), 1 when the visitor stops the read, else 0.
 * Out of line and self-contained (no run left pending in the walk): walk_records' CALL decoding
 * keeps the registers it had (a pending run in the walk cost 2 % on a CALL-only trace). */
static __attribute__((noinline)) int kernel_run(struct reader *r, const uint8_t **pp, size_t len, const uint8_t *end,
                                                uint32_t *k, uint32_t nrec) {
  struct ncs_kernel *x = r->b->row_kernels;
  struct ncs_raw *w = r->b->row_kraw;
  const uint8_t *p = *pp;
  size_t n = 0;
  if (dec_kernel_row(p, len, end, &x[0]) != 0) return -1;
  for (;;) {
    w[n++] = (struct ncs_raw){NCS_REC_KERNEL, p, len};
    p += len;
    if (n == NCS_KERNEL_RUN || *k + n >= nrec || end - p < 2 || p[0] != NCS_REC_KERNEL || p[1] >= 0x80 ||
        (size_t)(end - p - 2) < p[1] || dec_kernel_row(p + 2, p[1], end, &x[n]) != 0)
      break;
    len = p[1];
    p += 2;
  }
  *pp = p;
  *k += (uint32_t)n;
  r->st->records += n;
  return r->v->kernels(r->v->ctx, x, w, n) != 0;
}

static int walk_records(struct reader *r, const uint8_t *raw, size_t n, uint32_t nrec,
                        uint64_t index) {
  const uint8_t *p = raw, *end = raw + n;
  const struct ncs_visitor *v = r->v;
  struct ncs_call *run = r->b->row_calls;
  uint32_t nrun = 0;
  struct ncs_call_delta delta;
  ncs_call_delta_reset(&delta);
  /* the last CALL record (its first byte), the CALL_RUN template (encode.h) and whose it is */
  const uint8_t *last_call = NULL, *tmpl_of = NULL;
  struct ncs_call_tmpl tmpl = {.valid = 0};
  uint32_t k = 0;
  for (;;) {
    /* CALL records ncs_dec_call_fast answers (row_calls_fast); any other record, or a CALL
     * it leaves, by the code below */
    uint32_t max = NCS_ROW_RUN - nrun < nrec - k ? NCS_ROW_RUN - nrun : nrec - k;
    uint32_t m = row_calls_fast(&p, end, &delta, run + nrun, max, &last_call);
    k += m;
    if (!v->calls) {
      for (uint32_t i = 0; i < m; i++) {
        int rc = v->call ? v->call(v->ctx, &run[i]) != 0 : 0;
        r->st->records++;
        if (rc) return 1;
      }
    } else if ((nrun += m) == NCS_ROW_RUN) {
      FLUSH_ROW_RUN_()
      continue;
    }
    if (m && m == max) continue;
    if (p >= end) break;
    const uint8_t *rec = p;
    uint64_t type, len;
    if (end - p >= 2 && p[0] < 0x80 && p[1] < 0x80) { /* one-byte type and length */
      type = p[0];
      len = p[1];
      p += 2;
    } else if (ncs_get_varint(&p, end, &type) || ncs_get_varint(&p, end, &len)) {
      FLUSH_ROW_RUN_()
      set_error(r, r->chunk_off, "chunk %llu: record %u at raw byte %zu: bad record header",
                (unsigned long long)index, k, (size_t)(rec - raw));
      return -1;
    }
    if (len > (uint64_t)(end - p)) {
      FLUSH_ROW_RUN_()
      set_error(r, r->chunk_off,
                "chunk %llu: record %u at raw byte %zu: length %llu runs past the chunk end",
                (unsigned long long)index, k, (size_t)(rec - raw), (unsigned long long)len);
      return -1;
    }
    if (k >= nrec) {
      FLUSH_ROW_RUN_()
      set_error(r, r->chunk_off, "chunk %llu: more records than the %u its header states",
                (unsigned long long)index, nrec);
      return -1;
    }
    if (__builtin_expect(type == NCS_REC_KERNEL, 0) && v->kernels) { /* with those right after it, as a run */
      FLUSH_ROW_RUN_()
      int g = kernel_run(r, &p, (size_t)len, end, &k, nrec);
      if (g > 0) return 1;
      if (g == 0) continue;
    } /* (one that does not decode: to `raw`, as before) */
    if (type == NCS_REC_CALL_RUN) { /* its calls, gathered (or each visited) as CALL rows' */
      if (tmpl_of != last_call) { /* a new template (none before any CALL: tmpl stays invalid) */
        const uint8_t *q = last_call;
        uint64_t ty, ln;
        tmpl.valid = 0;
        if (q && ncs_get_varint(&q, end, &ty) == 0 && ncs_get_varint(&q, end, &ln) == 0)
          (void)ncs_call_tmpl_set(&tmpl, q, (size_t)ln);
        tmpl_of = last_call;
      }
      const uint8_t *q = p, *e = p + len;
      do { /* at least once: an empty body is damage */
        long got = ncs_dec_call_run(&q, e, &tmpl, &delta, run + nrun, NCS_ROW_RUN - nrun);
        if (got < 0) {
          FLUSH_ROW_RUN_()
          return record_failed(r, -1, index, k, type, (size_t)(rec - raw));
        }
        if (!v->calls) {
          for (long i = 0; i < got; i++) {
            r->st->records++;
            if (v->call && v->call(v->ctx, &run[i]) != 0) return 1;
          }
        } else if ((nrun += (uint32_t)got) == NCS_ROW_RUN) {
          FLUSH_ROW_RUN_()
        }
      } while (q < e);
      p = e;
      k++;
      continue;
    }
    if (type == NCS_REC_CALL) last_call = rec;
    if (type == NCS_REC_CALL && v->calls) { /* gathered; visited with the run */
      struct ncs_rbuf rb;
      ncs_rbuf_init(&rb, p, (size_t)len, NULL, 0);
      if (ncs_dec_call(&rb, &delta, &run[nrun])) {
        FLUSH_ROW_RUN_()
        return record_failed(r, -1, index, k, type, (size_t)(rec - raw));
      }
      p += len;
      k++;
      if (++nrun == NCS_ROW_RUN) FLUSH_ROW_RUN_()
      continue;
    }
    FLUSH_ROW_RUN_()
    int rc = dispatch(r, type > UINT32_MAX ? UINT32_MAX : (uint32_t)type, p, (size_t)len, &delta);
    if (rc < 0) return record_failed(r, rc, index, k, type, (size_t)(rec - raw));
    p += len;
    k++;
    r->st->records++;
    if (rc) return 1;
  }
  FLUSH_ROW_RUN_()
  return count_check(r, index, k, nrec);
}
#undef FLUSH_ROW_RUN_

/* The records of a column chunk whose columns ncs_columns_begin has opened in b->colrd: split
 * CALL and GPU_TIME records decoded a block at a time straight into their structs (no rows
 * rebuilt), other split records through their row body (rare), whole records as stored.
 * Returns as walk_records. */
/* (walk_columns) a split record at rd->at of a block in `structs`, and the records of its
 * type that follow it in the block (ncs_columns_run): to the visitor as one run, or each in
 * turn; rc as dispatch's, k and the records count moved on to the last one visited. */
#define VISIT_RUN_(name, structs) \
  { \
    uint32_t m_ = ncs_columns_run(rd, nrec - k - 1), i_ = 0; \
    const struct ncs_##name *x_ = &(structs)[rd->at]; \
    rc = 0; \
    if (v->name##s) \
      rc = v->name##s(v->ctx, x_, (size_t)(i_ = m_ + 1)) != 0; \
    else if (v->name) \
      for (; i_ <= m_ && !rc; i_++) rc = v->name(v->ctx, &x_[i_]) != 0; \
    else \
      i_ = m_ + 1; \
    k += i_ - 1; \
    r->st->records += i_ - 1; \
  }
/* (walk_columns) the fast path: x[0 .. m) of a block in `structs`, taken by
 * ncs_columns_next_run; returns 1 from walk_columns if the visitor stops (the records it was
 * handed counted read, as VISIT_RUN_ counts them) */
#define VISIT_TAKEN_(name, structs) \
  { \
    const struct ncs_##name *x_ = &(structs)[i]; \
    uint32_t i_ = m; \
    int s_ = 0; \
    if (v->name##s) s_ = v->name##s(v->ctx, x_, m) != 0; \
    else if (v->name) \
      for (i_ = 0; i_ < m && !s_; i_++) s_ = v->name(v->ctx, &x_[i_]) != 0; \
    k += i_; \
    r->st->records += i_; \
    if (s_) return 1; \
  }
/* (walk_columns, for a visitor with `stretch`) takes the stretch at rd's cursor: the records
 * that are CALL and GPU_TIME records of blocks decoded already (one-byte codes), at most max,
 * their interleaving written to order[]; returns how many, *nc of them CALL records (the
 * first at b->calls[*ic]), the rest GPU_TIME records (the first at b->gpu_times[*ig]). */
static inline __attribute__((always_inline)) uint32_t take_stretch(struct ncs_colrd *rd, uint32_t max, uint8_t *order,
                                                                  uint32_t *nc, uint32_t *ic, uint32_t *ig) {
  enum { CC = NCS_REC_CALL << 1 | 1, GC = NCS_REC_GPU_TIME << 1 | 1 };
  const uint8_t *p = rd->tp, *e = rd->te;
  if ((size_t)(e - p) > max) e = p + max;
  uint64_t lc = rd->tlim[NCS_REC_CALL] - rd->tpos[NCS_REC_CALL], lg = rd->tlim[NCS_REC_GPU_TIME] - rd->tpos[NCS_REC_GPU_TIME];
  uint32_t c = 0, g = 0;
  /* 8 codes at a time (little-endian hosts) while all are CC or GC and both blocks have room:
   * x = w ^ CC has bytes 0 (a CALL) and CC ^ GC = 30 (a GPU_TIME), nothing else, exactly when
   * x == o * 30 with o = its bytes' bit 4, which is order[] for those 8 */
  _Static_assert((CC ^ GC) == 30, "the codes' difference is bit 4 and below");
  for (uint64_t w, x, o, ng; e - p >= 8; p += 8) {
    memcpy(&w, p, 8);
    x = w ^ (CC * 0x0101010101010101ull);
    o = (x >> 4) & 0x0101010101010101ull;
    ng = (o * 0x0101010101010101ull) >> 56; /* o's bytes summed (each 0 or 1: no carry); not
                                                  __builtin_popcountll, a libgcc call without -mpopcnt */
    if (x != o * 30 || c + (8 - ng) > lc || g + ng > lg) break;
    memcpy(order + c + g, &o, 8);
    c += (uint32_t)(8 - ng);
    g += (uint32_t)ng;
  }
  for (; p < e; p++) {
    if (*p == CC && c < lc) order[c++ + g] = 0;
    else if (*p == GC && g < lg) order[c + g++] = 1;
    else break;
  }
  *ic = (uint32_t)(rd->tpos[NCS_REC_CALL] - rd->tbase[NCS_REC_CALL]);
  *ig = (uint32_t)(rd->tpos[NCS_REC_GPU_TIME] - rd->tbase[NCS_REC_GPU_TIME]);
  rd->tp = p;
  rd->tpos[NCS_REC_CALL] += c;
  rd->tpos[NCS_REC_GPU_TIME] += g;
  *nc = c;
  return c + g;
}

/* (walk_columns, for a visitor with `stretch`) the chunk's closing pair, read ahead (trace.h,
 * struct ncs_stretch): when the types column ends with a CLOCK record and the single-byte codes
 * of CALL, GPU_TIME or INFLIGHT records before it, returns where those codes start (a stretch
 * that ends there or later is followed by nothing else) with the pair in *out; else NULL. The
 * pair is decoded from copies of its columns' cursors (a split CLOCK, at most CLOCKS_AHEAD of
 * them in the chunk, not keyed) or from the last whole body, as dispatch decodes it; the walk's
 * own cursors do not move. */
#define CLOCKS_AHEAD 16
static const uint8_t *closing_pair(const struct ncs_colrd *rd, struct ncs_clock *out) {
  enum { CLOCK_W = NCS_REC_CLOCK << 1, CLOCK_S = NCS_REC_CLOCK << 1 | 1 };
  const uint8_t *tp = rd->tp, *q = rd->te;
  if (q - tp < 1 || (q - tp >= 2 && q[-2] >= 0x80)) return NULL; /* the last code is not one byte */
  uint8_t last = *--q;
  uint8_t row[NCS_COL_MAX_FIELDS * 10];
  const uint8_t *body = row;
  size_t len = 0;
  if (last == CLOCK_S) {
    uint32_t t = NCS_REC_CLOCK, nf = rd->nf[t];
    uint64_t n = rd->tcount[t];
    if (!nf || !n || n > CLOCKS_AHEAD || rd->tkeyed[t]) return NULL;
    for (uint32_t j = 0; j < nf; j++) {
      uint64_t v[CLOCKS_AHEAD];
      struct ncs_colr k = *rd->colof[rd->first_col[t] + j];
      k.vals = v;
      (void)ncs_col_decode(&k, n);
      len += ncs_put_varint(row + len, ncs_col_row_value(&k, v[n - 1]));
    }
  } else if (last == CLOCK_W) {
    const uint8_t *l = rd->le; /* the last length: its last byte, and the continuation bytes before it */
    uint64_t n;
    if (l == rd->lp) return NULL;
    for (l--; l > rd->lp && l[-1] >= 0x80; l--) {}
    if (ncs_get_varint(&l, rd->le, &n) != 0 || n > (uint64_t)(rd->be - rd->bp)) return NULL;
    body = rd->be - n;
    len = (size_t)n;
  } else {
    return NULL;
  }
  struct ncs_rbuf rb;
  if (ncs_dec_clock(ncs_rbuf_on(&rb, body, len), out) != 0) return NULL;
  enum { CC = NCS_REC_CALL << 1 | 1, GC = NCS_REC_GPU_TIME << 1 | 1 };
  _Static_assert((CC ^ GC) == 30, "the codes' difference is bit 4 and below");
  /* back over the records that may come between a stretch and the pair: 8 CALL or GPU_TIME
   * codes at a time (take_stretch's test), then one at a time */
  for (uint64_t w, x; q - tp >= 8; q -= 8) {
    memcpy(&w, q - 8, 8);
    x = w ^ (CC * 0x0101010101010101ull);
    if (x != ((x >> 4) & 0x0101010101010101ull) * 30) break;
  }
  while (q > tp) {
    uint8_t c = q[-1];
    if (c != (NCS_REC_CALL << 1 | 1) && c != (NCS_REC_GPU_TIME << 1 | 1) && c >> 1 != NCS_REC_INFLIGHT) break;
    q--;
  }
  return q;
}

static int walk_columns(struct reader *r, uint32_t nrec, uint64_t index) {
  struct ncs_trace_bufs *b = r->b;
  struct ncs_colrd *rd = &b->colrd;
  const struct ncs_visitor *v = r->v;
  struct ncs_call_delta delta;
  ncs_call_delta_reset(&delta);
  uint32_t k = 0;
  struct ncs_clock closing;
  const uint8_t *tail = v->stretch ? closing_pair(rd, &closing) : NULL; /* NULL: no pair told ahead */
  for (;; k++) {
    if (v->stretch) { /* a stretch whole: CALL and GPU_TIME records of blocks decoded already */
      for (uint32_t m, nc, ic, ig; (m = take_stretch(rd, nrec - k, b->order, &nc, &ic, &ig)) != 0;) {
        struct ncs_stretch s = {&b->calls[ic], &b->gpu_times[ig], nc, m - nc, b->order, NULL, 0};
        if (tail && rd->tp >= tail && rd->tp < rd->te) { s.closing = &closing; s.after = (size_t)(rd->te - rd->tp) - 1; }
        k += m;
        r->st->records += m;
        if (v->stretch(v->ctx, &s)) return 1;
      }
    } else {
      /* CALL and GPU_TIME records of blocks decoded already, a run of one type at a time (with
       * GPU times the two interleave: most runs are one record) */
      for (uint32_t t, i, m; (m = ncs_columns_next_run(rd, NCS_REC_CALL, NCS_REC_GPU_TIME, nrec - k, &t, &i)) != 0;) {
        if (t == NCS_REC_CALL) VISIT_TAKEN_(call, b->calls)
        else VISIT_TAKEN_(gpu_time, b->gpu_times)
      }
    }
    /* any other record, and the first of a block: the general path */
    uint64_t type;
    const uint8_t *body = NULL;
    size_t len = 0;
    const char *why = "";
    int got = ncs_columns_next(rd, &type, &body, &len, &why);
    if (got == 0 && ncs_columns_end(rd, &why) == 0) break;
    if (got <= 0) {
      set_error(r, r->chunk_off, "chunk %llu: bad column payload (at its byte 0): %s", (unsigned long long)index, why);
      return -1;
    }
    if (k >= nrec) {
      set_error(r, r->chunk_off, "chunk %llu: more records than the %u its header states",
                (unsigned long long)index, nrec);
      return -1;
    }
    int rc;
    if (body) {
      rc = dispatch(r, type > UINT32_MAX ? UINT32_MAX : (uint32_t)type, body, len, &delta);
    } else if (type == NCS_REC_CALL) { /* this record and those of its block right after it */
      if (rd->at == 0) ncs_decv_call(rd->vp, rd->nv, rd->vsame, rd->vsigned, rd->nblock, &b->calls_memo, &delta, b->calls);
      if (v->stretch && rd->tp[-1] == (NCS_REC_CALL << 1 | 1)) { /* its block decoded: from it, a stretch */
        rd->tp--;
        rd->tpos[NCS_REC_CALL]--;
        k--;
        continue;
      }
      VISIT_RUN_(call, b->calls)
    } else if (type == NCS_REC_GPU_TIME) {
      if (rd->at == 0) ncs_decv_gpu_time(rd->vp, rd->nv, rd->vsame, rd->vsigned, rd->nblock, &b->gpu_times_memo, &delta, b->gpu_times);
      if (v->stretch && rd->tp[-1] == (NCS_REC_GPU_TIME << 1 | 1)) {
        rd->tp--;
        rd->tpos[NCS_REC_GPU_TIME]--;
        k--;
        continue;
      }
      VISIT_RUN_(gpu_time, b->gpu_times)
    } else if (type == NCS_REC_KERNEL && v->kernels) { /* this record and those of its block right after it */
      if (rd->at == 0) ncs_decv_kernel(rd->vp, rd->nv, rd->vsame, rd->vsigned, rd->nblock, &b->kernels_memo, b->kernels);
      uint32_t m = ncs_columns_run(rd, nrec - k - 1 < NCS_KERNEL_RUN - 1 ? nrec - k - 1 : NCS_KERNEL_RUN - 1);
      /* no raw[]: a split record's stored body is its fields (trace.h), rebuilt by whoever needs it */
      rc = v->kernels(v->ctx, &b->kernels[rd->at], NULL, m + 1) != 0;
      k += m;
      r->st->records += m;
    } else {
      uint8_t row[NCS_COL_MAX_FIELDS * 10];
      rc = dispatch(r, (uint32_t)type, row, ncs_columns_body(rd, row), &delta);
    }
    if (rc < 0) return record_failed(r, rc, index, k, type, SIZE_MAX);
    r->st->records++;
    if (rc) return 1;
  }
  return count_check(r, index, k, nrec);
}
#undef VISIT_TAKEN_
#undef VISIT_RUN_

const char *ncs_process_get(const struct ncs_process *p, const char *key) {
  if (!p || !key) return NULL;
  for (size_t i = 0; i < p->nkv; i++)
    if (p->kv[i].key && strcmp(p->kv[i].key, key) == 0) return p->kv[i].value;
  return NULL;
}

/* Opens the column payload (columns.h) in b->payload for walk_columns: 0, or -1 (damage,
 * reported at the chunk's offset, with the payload byte where it was found). */
static int open_columns(struct reader *r, uint64_t index, uint32_t psz, uint32_t rsz) {
  struct ncs_trace_bufs *b = r->b;
  for (int tries = 0; tries < 2; tries++) {
    size_t need = 0, where = 0;
    const char *why = "";
    int rc = ncs_columns_begin(&b->colrd, b->dctx, b->payload, psz, rsz, b->cols, b->cols_cap, &need, &why, &where);
    if (rc == 0) return 0;
    if (rc == -1) {
      set_error(r, r->chunk_off, "chunk %llu: bad column payload (at its byte %zu): %s",
                (unsigned long long)index, where, why);
      return -1;
    }
    if (grow(&b->cols, &b->cols_cap, need)) break;
  }
  set_error(r, r->chunk_off, "chunk %llu: out of memory for its columns", (unsigned long long)index);
  return -1;
}

/* Reads and checks one chunk at r->chunk_off. Returns 0 ok, 3 clean end of file, 4 file ends
 * inside the chunk (truncated), 1 stopped by a callback, -1 damage. */
static int read_chunk(struct reader *r) {
  uint8_t h[NCS_CHUNK_HEADER_SIZE];
  size_t got = read_full(r->f, h, sizeof h);
  if (got == 0) return 3;
  if (got < sizeof h) return 4;
  uint32_t magic = ncs_get_u32(h + NCS_CH_MAGIC), psz = ncs_get_u32(h + NCS_CH_PAYLOAD);
  uint32_t rsz = ncs_get_u32(h + NCS_CH_RAW), nrec = ncs_get_u32(h + NCS_CH_RECORDS);
  uint64_t index = ncs_get_u64(h + NCS_CH_INDEX), dropped = ncs_get_u64(h + NCS_CH_DROPPED);
  uint32_t sum = ncs_get_u32(h + NCS_CH_CHECKSUM), flags = ncs_get_u32(h + NCS_CH_FLAGS);
  if (magic == 0 && r->bounded && r->st->chunks == 0) {
    /* the writer freed this segment after the header was read (a live job): start again at the
     * first chunk it still keeps */
    uint8_t v[8];
    if (fseeko(r->f, NCS_FH_FIRST_KEPT, SEEK_SET) == 0 && read_full(r->f, v, 8) == 8 && ncs_get_u64(v) > r->chunk_off &&
        fseeko(r->f, (off_t)ncs_get_u64(v), SEEK_SET) == 0) {
      r->chunk_off = ncs_get_u64(v);
      return read_chunk(r);
    }
    fseeko(r->f, (off_t)r->chunk_off + NCS_CHUNK_HEADER_SIZE, SEEK_SET);
  }
  if (magic != NCS_CHUNK_MAGIC) {
    set_error(r, r->chunk_off, "bad chunk magic 0x%08x (expected 0x%08x)", magic, NCS_CHUNK_MAGIC);
    return -1;
  }
  if (psz > NCS_CHUNK_MAX_PAYLOAD || rsz > NCS_CHUNK_MAX_RAW || psz == 0) {
    set_error(r, r->chunk_off, "chunk sizes out of limits (payload %u, raw %u bytes)", psz, rsz);
    return -1;
  }
  struct ncs_trace_bufs *b = r->b;
  if (grow(&b->payload, &b->payload_cap, psz) || grow(&b->raw, &b->raw_cap, rsz && !(flags & NCS_CHUNK_F_COLUMNS) ? rsz : 1)) {
    set_error(r, r->chunk_off, "out of memory for a chunk of %u bytes", rsz);
    return -1;
  }
  size_t have = read_full(r->f, b->payload, psz);
  if (have < psz) {
    set_error(r, r->chunk_off, "truncated: the file ends inside chunk %llu (%zu of its %u payload bytes present)",
              (unsigned long long)index, have, psz);
    return 4;
  }
  uint32_t hsum = ncs_chunk_sum(r->proc.major, h, b->payload, psz);
  if (hsum != sum) {
    set_error(r, r->chunk_off, "chunk %llu: bad checksum 0x%08x (computed 0x%08x)",
              (unsigned long long)index, sum, hsum);
    return -1;
  }
  int rc;
  if ((flags & NCS_CHUNK_F_SEGMENT) && r->st->chunks > 0) {
    rc = 0; /* a later segment's start repeats what the reader has (docs/FORMAT.md "Bounded files") */
  } else if (flags & NCS_CHUNK_F_COLUMNS) {
    if (open_columns(r, index, psz, rsz) != 0) return -1;
    rc = walk_columns(r, nrec, index);
  } else {
    size_t fsz = ZSTD_findFrameCompressedSize(b->payload, psz);
    unsigned long long csz = ZSTD_getFrameContentSize(b->payload, psz);
    if (ZSTD_isError(fsz) || fsz != psz) {
      set_error(r, r->chunk_off, "chunk %llu: payload is not one complete zstd frame",
                (unsigned long long)index);
      return -1;
    }
    if (csz != ZSTD_CONTENTSIZE_UNKNOWN && csz != rsz) {
      set_error(r, r->chunk_off, "chunk %llu: zstd frame holds %llu bytes, header states %u",
                (unsigned long long)index, csz == ZSTD_CONTENTSIZE_ERROR ? 0ull : csz, rsz);
      return -1;
    }
    size_t n = ZSTD_decompressDCtx(b->dctx, b->raw, rsz, b->payload, psz);
    if (ZSTD_isError(n) || n != rsz) {
      set_error(r, r->chunk_off, "chunk %llu: decompression failed (%s)", (unsigned long long)index,
                ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size");
      return -1;
    }
    rc = walk_records(r, b->raw, n, nrec, index);
  }
  if (rc < 0) return -1;
  /* the chunk is good (or a callback stopped inside it) */
  r->st->chunks++;
  r->next_index = index + 1;
  r->st->dropped_total = dropped;
  r->st->bytes = r->chunk_off + NCS_CHUNK_HEADER_SIZE + psz;
  r->st->final_seen = (flags & NCS_CHUNK_F_FINAL) != 0;
  r->st->exec_ended = (flags & NCS_CHUNK_F_EXEC) != 0; /* only the last chunk's counts */
  if (rc == 1) return 1;
  /* a `kernels` chunk (5.7) is the end of the chunk before it, whose `chunk` was called: the
   * visitors' chunks stay the writer's flushes (their INFLIGHT records, their count) */
  if (r->v->chunk && !(flags & NCS_CHUNK_F_KERNELS) && r->v->chunk(r->v->ctx, index, dropped, flags, r->chunk_off))
    return 1;
  r->chunk_off += NCS_CHUNK_HEADER_SIZE + psz;
  return 0;
}

struct ncs_trace_bufs *ncs_trace_bufs_new(void) {
  struct ncs_trace_bufs *b = calloc(1, sizeof *b);
  if (b && !(b->dctx = ZSTD_createDCtx())) { free(b); b = NULL; }
  return b;
}

void ncs_trace_bufs_free(struct ncs_trace_bufs *b) {
  if (!b) return;
  ZSTD_freeDCtx(b->dctx);
  free(b->payload);
  free(b->raw);
  free(b->scratch);
  free(b->cols);
  free(b);
}

int ncs_trace_open(const char *path, const struct ncs_visitor *v, struct ncs_read_status *st,
                   struct ncs_trace **out) {
  static const struct ncs_visitor none;
  memset(st, 0, sizeof *st);
  *out = NULL;
  struct ncs_trace *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(st->error, sizeof st->error, "%s: offset 0: out of memory", path);
    return 2;
  }
  struct reader *r = &t->r;
  r->path = path;
  r->v = v ? v : &none;
  r->st = st;
  r->proc.path = path;
  r->done = 1;
  r->ret = 2;
  r->f = ncs_fopen_regular(path, st->error, sizeof st->error);
  if (!r->f) goto fail;
  ncs_readcount_read(path);
  uint8_t fh[NCS_FILE_HEADER_SIZE];
  if (read_full(r->f, fh, sizeof fh) < sizeof fh || memcmp(fh, NCS_FILE_MAGIC, 8) != 0) {
    set_error(r, 0, "not an ncclscope trace (no NCSTRACE file header)");
    goto fail;
  }
  r->proc.major = ncs_get_u16(fh + NCS_FH_MAJOR);
  r->proc.minor = ncs_get_u16(fh + NCS_FH_MINOR);
  r->proc.created_realtime_ns = ncs_get_u64(fh + NCS_FH_REALTIME);
  r->proc.pid = ncs_get_u32(fh + NCS_FH_PID);
  uint32_t hsize = ncs_get_u32(fh + NCS_FH_SIZE);
  if (r->proc.major < NCS_FORMAT_MAJOR_OLDEST || r->proc.major > NCS_FORMAT_MAJOR) {
    set_error(r, NCS_FH_MAJOR, "format version %u.%u; this reader reads %u.x to %u.x", r->proc.major,
              r->proc.minor, NCS_FORMAT_MAJOR_OLDEST, NCS_FORMAT_MAJOR);
    goto fail;
  }
  if (hsize < NCS_FILE_HEADER_SIZE || hsize > (1u << 20) || fseeko(r->f, hsize, SEEK_SET) != 0) {
    set_error(r, NCS_FH_SIZE, "bad file header size %u", hsize);
    goto fail;
  }
  r->chunk_off = hsize;
  r->bounded = (ncs_get_u32(fh + NCS_FH_FLAGS) & NCS_FILE_F_BOUNDED) != 0;
  uint64_t first = ncs_get_u64(fh + NCS_FH_FIRST_KEPT);
  if (r->bounded && first > hsize) {
    if (fseeko(r->f, (off_t)first, SEEK_SET) != 0) {
      set_error(r, NCS_FH_FIRST_KEPT, "bad first kept chunk offset %llu", (unsigned long long)first);
      goto fail;
    }
    r->chunk_off = first;
  }
  st->bytes = hsize;
  r->done = 0;
  r->ret = 0;
  *out = t;
  return 0;
fail:
  ncs_trace_close(t);
  return 2;
}

void ncs_trace_park(struct ncs_trace *t) {
  if (t && t->r.f) { fclose(t->r.f); t->r.f = NULL; }
}

/* A cut trace: deliver what its rings file holds (recover.h) as if it were its next chunk. */
static void recover_cut(struct reader *r) {
  struct ncs_read_status *st = r->st;
  struct ncs_recovered rec;
  int rc = ncs_rings_recover(r->path, r->proc.pid, r->proc.created_realtime_ns, r->next_index, &rec);
  if (rc > 0) {
    int w = 0;
    if (rec.chunk_records) w = walk_records(r, rec.chunk, rec.chunk_len, rec.chunk_records, st->chunks);
    if (w == 0 && rec.rings_records) w = walk_records(r, rec.rings, rec.rings_len, rec.rings_records, st->chunks);
    if (w == 1) st->stopped = 1;
    if (w >= 0) st->recovered = rec.calls;
  }
  if (rec.note[0]) {
    size_t n = strlen(st->error);
    snprintf(st->error + n, sizeof st->error - n, "%s%s", n ? "; " : "", rec.note);
  }
  ncs_recovered_free(&rec);
}

int ncs_trace_next(struct ncs_trace *t, struct ncs_trace_bufs *b) {
  if (!t || t->r.done) return 0;
  struct reader *r = &t->r;
  struct ncs_read_status *st = r->st;
  if (!b) {
    set_error(r, r->chunk_off, "out of memory");
    st->damaged = 1;
    r->ret = 1;
    r->done = 1;
    return 0;
  }
  if (!r->f) { /* parked: reopen where the next chunk starts */
    r->f = ncs_fopen_regular(r->path, NULL, 0);
    if (!r->f || fseeko(r->f, (off_t)r->chunk_off, SEEK_SET) != 0) {
      set_error(r, r->chunk_off, "cannot reopen: %s", strerror(errno));
      st->damaged = 1;
      r->ret = 1;
      r->done = 1;
      return 0;
    }
  }
  r->b = b;
  int rc = read_chunk(r);
  r->b = NULL;
  if (rc == 0) return 1;
  r->done = 1;
  if (rc == 1) {
    st->stopped = 1;
  } else if (rc == 3) { /* clean end of file */
    if (!st->final_seen && st->exec_ended) {
      /* the image called exec after this chunk: complete (its communicators went with it) */
    } else if (!st->final_seen && r->comms_seen && !st->comms_open) {
      st->comms_closed = 1; /* every communicator ended, then _exit: complete */
    } else if (!st->final_seen) {
      st->truncated = 1;
      if (st->comms_open)
        set_error(r, r->chunk_off, "cut short (truncated): no final chunk, %u communicator(s) still open (the process was "
                  "killed, or is still running)", st->comms_open);
      else
        set_error(r, r->chunk_off, "cut short (truncated): no final chunk and no communicator recorded (the process was "
                  "killed, or is still running)");
    }
  } else if (rc == 4) {
    st->truncated = 1;
    if (!st->error[0])
      set_error(r, r->chunk_off, "truncated: the file ends inside the header of chunk %llu",
                (unsigned long long)st->chunks);
  } else {
    st->damaged = 1;
    r->ret = 1;
  }
  if (st->truncated) {
    r->b = b;
    recover_cut(r);
    r->b = NULL;
  }
  ncs_trace_park(t);
  return 0;
}

int ncs_trace_close(struct ncs_trace *t) {
  if (!t) return 2;
  int ret = t->r.ret;
  ncs_trace_park(t);
  free(t->r.kv_store);
  free(t->r.open_comm);
  free(t);
  return ret;
}

int ncs_trace_read(const char *path, const struct ncs_visitor *v, struct ncs_read_status *st) {
  struct ncs_trace *t;
  int ret = ncs_trace_open(path, v, st, &t);
  if (ret) return ret;
  struct ncs_trace_bufs *b = ncs_trace_bufs_new();
  if (!b) {
    set_error(&t->r, 0, "out of memory");
    ncs_trace_close(t);
    return 2;
  }
  while (ncs_trace_next(t, b)) {}
  ret = ncs_trace_close(t);
  ncs_trace_bufs_free(b);
  return ret;
}


/* ---- path expansion ---- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push(char ***v, int *n, int *cap, char *s) {
  if (!s) return -1;
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    char **p = realloc(*v, (size_t)nc * sizeof *p);
    if (!p) { free(s); return -1; }
    *v = p;
    *cap = nc;
  }
  (*v)[(*n)++] = s;
  return 0;
}

const char *ncs_paths_command = "report";

/* How many *.ncs entries directory `dir` holds (not recursing). */
static int count_ncs(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    n += l >= 5 && strcmp(e->d_name + l - 4, ".ncs") == 0;
  }
  closedir(d);
  return n;
}

/* The subdirectories of `dir` (depth-first, sorted, at most `depth` levels down) that hold
 * traces, appended to *v (their paths, malloc'ed). Bounded: at most 64 directories listed. */
static void subdirs_with_traces(const char *dir, int depth, char ***v, int *n, int *cap, int *total) {
  if (depth <= 0) return;
  DIR *d = opendir(dir);
  if (!d) return;
  char **names = NULL;
  int nn = 0, cn = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || nn >= 4096) continue;
    size_t pl = strlen(dir), l = strlen(e->d_name);
    char *s = malloc(pl + l + 2);
    if (!s) break;
    snprintf(s, pl + l + 2, "%s%s%s", dir, (pl && dir[pl - 1] == '/') ? "" : "/", e->d_name);
    struct stat sb;
    if (lstat(s, &sb) != 0 || !S_ISDIR(sb.st_mode) || push(&names, &nn, &cn, s)) { free(s); continue; }
  }
  closedir(d);
  if (nn > 1) qsort(names, (size_t)nn, sizeof *names, cmp_str);
  for (int i = 0; i < nn; i++) {
    int k = count_ncs(names[i]);
    if (k) { (*total)++; if (*n < 64) push(v, n, cap, strdup(names[i])); }
    subdirs_with_traces(names[i], depth - 1, v, n, cap, total);
    free(names[i]);
  }
  free(names);
}

/* A directory given as PATH holds no trace: when its subdirectories do, name them and the
 * command that reads them (traces of several runs kept one directory per run). */
static void hint_subdirs(const char *dir) {
  char **v = NULL;
  int n = 0, cap = 0, total = 0;
  subdirs_with_traces(dir, 4, &v, &n, &cap, &total);
  if (total) {
    fprintf(stderr, "ncclscope: %s: no trace (*.ncs) in it, but %d of its subdirector%s hold%s traces:", dir, total,
            total == 1 ? "y" : "ies", total == 1 ? "s" : "");
    for (int i = 0; i < n && i < 8; i++) fprintf(stderr, " %s (%d)", v[i], count_ncs(v[i]));
    if (total > 8) fprintf(stderr, " ...");
    fprintf(stderr, "\nncclscope: read %s with: ncclscope %s %s\n", total == 1 ? "it" : "them one at a time",
            ncs_paths_command, v[0]);
  }
  ncs_paths_free(v, n);
}

int ncs_paths_expand(int npaths, char **paths, char ***out) {
  char **v = NULL;
  int n = 0, cap = 0;
  *out = NULL;
  for (int i = 0; i < npaths; i++) {
    struct stat sb;
    if (stat(paths[i], &sb) != 0) {
      fprintf(stderr, "ncclscope: %s: %s\n", paths[i], strerror(errno));
      goto fail;
    }
    if (!S_ISDIR(sb.st_mode)) {
      if (!S_ISREG(sb.st_mode)) {
        fprintf(stderr, "ncclscope: %s: not a regular file (a %s): not read\n", paths[i], ncs_regular_kind(sb.st_mode));
        goto fail;
      }
      if (push(&v, &n, &cap, strdup(paths[i]))) goto fail;
      continue;
    }
    DIR *d = opendir(paths[i]);
    if (!d) {
      fprintf(stderr, "ncclscope: %s: %s\n", paths[i], strerror(errno));
      goto fail;
    }
    int first = n;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      size_t l = strlen(e->d_name);
      if (l < 5 || strcmp(e->d_name + l - 4, ".ncs") != 0) continue;
      size_t pl = strlen(paths[i]);
      char *s = malloc(pl + l + 2);
      if (!s) { closedir(d); goto fail; }
      snprintf(s, pl + l + 2, "%s%s%s", paths[i], (pl && paths[i][pl - 1] == '/') ? "" : "/", e->d_name);
      struct stat es;
      if (stat(s, &es) == 0 && !S_ISREG(es.st_mode)) { /* a FIFO named x.ncs would block a read */
        fprintf(stderr, "ncclscope: %s: not a regular file (a %s): skipped\n", s, ncs_regular_kind(es.st_mode));
        free(s);
        continue;
      }
      if (push(&v, &n, &cap, s)) { closedir(d); goto fail; }
    }
    closedir(d);
    if (n > first) qsort(v + first, (size_t)(n - first), sizeof *v, cmp_str);
    else hint_subdirs(paths[i]);
  }
  *out = v;
  return n;
fail:
  ncs_paths_free(v, n);
  return -1;
}

void ncs_paths_free(char **files, int n) {
  for (int i = 0; i < n; i++) free(files[i]);
  free(files);
}
