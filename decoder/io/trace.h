/* trace.h — reading ncclscope trace files (docs/FORMAT.md) as a stream of decoded records.
 *
 * Contract: ncs_trace_read() reads one file start to end, decoding each chunk and handing
 * every record to the visitor's callbacks in file order; memory stays bounded by one chunk,
 * whatever the file's length. Damage (bad magic, size, checksum, compression, record framing)
 * stops the read of that file: the status names the file and byte offset, and every record
 * before the damaged chunk has already been delivered. Never aborts, never exits.
 * ncs_trace_open/next/close read the same way one chunk per call, so that many files can be
 * read side by side (decoder/model/jobload.c advances a whole job's files in lockstep): an open
 * trace keeps only its position, status and PROCESS record; the decoding buffers and the zstd
 * context are a separate set (ncs_trace_bufs), one per thread, shared by the files it reads. */
#ifndef NCS_TRACE_H
#define NCS_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "ncclscope/encode.h"


/* The PROCESS record plus the file header. Strings live until the read returns. */
struct ncs_process {
  const char *path;         /* file being read */
  unsigned major, minor;    /* format version */
  uint64_t created_realtime_ns;
  uint32_t pid;
  const struct ncs_kv *kv;  /* every key/value pair of the PROCESS record */
  size_t nkv;
};
/* Value of key `key` in p, or NULL. */
const char *ncs_process_get(const struct ncs_process *p, const char *key);

/* Record structs (ncs_call, ncs_comm, ncs_thread, ...) are in ncclscope/encode.h, shared with
 * the writers. */

/* A record this reader does not decode (READ RAW in NCS_RECORDS, and future types): raw body. */
struct ncs_raw { uint32_t type; const uint8_t *body; size_t len; };
#define NCS_KERNEL_RUN 256 /* the longest run of KERNEL records a visitor's `kernels` gets */

/* A stretch of a column chunk: CALL and GPU_TIME records that follow one another in the file
 * with no other record between them, of one block of each type (at most NCS_COLR_BLOCK of
 * each): c[0 .. nc) and g[0 .. ng) in file order within their type, and order[0 .. nc + ng)
 * their interleaving: order[i] is 0 when the file's i-th record of the stretch is a CALL (the
 * next of c), 1 when it is a GPU_TIME (the next of g). closing: what the rest of the chunk
 * holds, told ahead: set when each of the stretch's next `after` records is a CALL, GPU_TIME
 * or INFLIGHT record and the one after them, the chunk's last, is a CLOCK record of this pair
 * (NULL otherwise: another record still comes, or the pair could not be read ahead); the pair
 * still comes as its record, in its place. */
struct ncs_stretch {
  const struct ncs_call *c;
  const struct ncs_gpu_time *g;
  size_t nc, ng;
  const uint8_t *order;
  const struct ncs_clock *closing;
  size_t after;
};

/* Callbacks may be NULL. A callback returning non-zero stops the read (status.stopped = 1).
 * Pointers inside a record are valid only during the callback.
 * CALL and GPU_TIME records come a run at a time to a visitor that sets `calls` / `gpu_times`:
 * x[0 .. n-1] (n >= 1) are consecutive records of the file, all of that type, in file order
 * (a column chunk's runs are up to a block of records; a row chunk's CALL runs up to 256, its
 * GPU_TIME runs single records). A CALL_RUN record (5.0) comes as the CALL records it stands
 * for, to either callback: visitors never see one. A run callback, when set, is called instead of the per-record
 * one (`call` / `gpu_time`); non-zero from it stops the read after the run, every record of
 * which counts as read. */
struct ncs_visitor {
  void *ctx;
  /* one callback per record of NCS_RECORDS (ncclscope/records.h) whose READ is VISIT, named
   * as its struct (int (*thread)(void *ctx, const struct ncs_thread *), ...; a DELTA record,
   * CALL or GPU_TIME, also has the run callback `calls` / `gpu_times` described above), and
   * `process` for the PROCESS record with the file header */
#define NCS_VMEMBER_(T, name, st, rd) NCS_VMEMBER_##rd##_##st(name)
#define NCS_VMEMBER_VISIT_PLAIN(name) int (*name)(void *ctx, const struct ncs_##name *);
#define NCS_VMEMBER_VISIT_DELTA(name) \
  int (*name)(void *ctx, const struct ncs_##name *); \
  int (*name##s)(void *ctx, const struct ncs_##name *x, size_t n);
#define NCS_VMEMBER_RAW_PLAIN(name)
#define NCS_VMEMBER_PROCESS_PLAIN(name) int (*process)(void *ctx, const struct ncs_process *);
  NCS_RECORDS(NCS_VMEMBER_)
  int (*raw)(void *ctx, const struct ncs_raw *); /* every record whose READ is RAW, and any
                                                    type this reader does not know */
  /* KERNEL records (RAW: a body that does not decode is no damage) decoded once by the reader
   * for every receiver: a run of consecutive ones that decoded, k[i] as decoded and raw[i] as
   * stored, or raw NULL for a column chunk's split ones, whose stored bodies are their fields
   * as shortest varints: ncs_enc_kernel_body(k[i]) (at most NCS_KERNEL_RUN, and in a column
   * chunk at most the rest of a block of values; a mux rebuilds those bodies for a receiver
   * that takes them through `raw`); a visitor with `kernels` gets its KERNEL records here,
   * not through `raw`, but for one whose body does not decode (then `raw`, as before) */
  int (*kernels)(void *ctx, const struct ncs_kernel *k, const struct ncs_raw *raw, size_t n);
  /* Column chunks' CALL and GPU_TIME records a stretch at a time (struct ncs_stretch), to a
   * visitor that sets it, instead of `calls` / `call` and `gpu_times` / `gpu_time` (those still
   * get the records of row chunks and of recovered rings: a visitor setting `stretch` sets them
   * too); non-zero stops the read after the stretch, all of which counts as read. A mux
   * (io/mux.h) sets it and hands a stretch to each receiver without one as its CALL records,
   * then its GPU_TIME records: the interleaving is lost there (see mux.h). ncs_stretch_in_order
   * replays a stretch in file order. */
  int (*stretch)(void *ctx, const struct ncs_stretch *s);
  /* Called after each chunk's records, with its header values; not after a chunk flagged
   * `kernels` (5.7: the KERNEL records of the row chunk before it, docs/FORMAT.md), whose
   * records come between that chunk's call and the next one's: each call is a writer's flush. */
  int (*chunk)(void *ctx, uint64_t index, uint64_t dropped_total, uint32_t flags, uint64_t offset);
};

/* Two adjacent uint32_t members as one 64-bit word: a CALL's comm and datatype (in that
 * order), which run visitors compare at once. */
_Static_assert(offsetof(struct ncs_call, datatype) == offsetof(struct ncs_call, comm) + 4, "comm, datatype");
static inline uint64_t ncs_u32_pair(const uint32_t *first) {
  uint64_t v;
  memcpy(&v, first, sizeof v);
  return v;
}

/* A stretch to `calls` and `gpu_times` in file order: each of its runs of one type, in turn
 * (inlined: with constant callbacks the calls are direct). Returns non-zero when a callback
 * did; the whole stretch is delivered even then. */
static inline __attribute__((always_inline)) int
ncs_stretch_in_order(const struct ncs_stretch *s, void *ctx, int (*calls)(void *, const struct ncs_call *, size_t),
                     int (*gpu_times)(void *, const struct ncs_gpu_time *, size_t)) {
  const uint8_t *o = s->order, *e = o + s->nc + s->ng;
  const struct ncs_call *c = s->c;
  const struct ncs_gpu_time *g = s->g;
  int stop = 0;
  while (o < e) {
    const uint8_t *q = o + 1;
    uint8_t kind = *o;
    while (q < e && *q == kind) q++;
    size_t n = (size_t)(q - o);
    if (kind) { stop |= gpu_times(ctx, g, n); g += n; }
    else { stop |= calls(ctx, c, n); c += n; }
    o = q;
  }
  return stop;
}

struct ncs_read_status {
  uint64_t chunks, records, bytes;   /* good chunks and records read, bytes consumed */
  uint64_t dropped_total;            /* from the last good chunk header */
  int final_seen;                    /* a chunk had the FINAL flag (clean shutdown) */
  int truncated;                     /* cut: the file ends inside a chunk, or lacks a FINAL
                                        chunk while a communicator was still open (a kill);
                                        a cut trace is normal input (everything before the
                                        cut is there), not damage */
  int exec_ended;                    /* the last chunk has the EXEC flag: the process replaced its
                                        image with exec (the same pid goes on as a new image, in
                                        a file of its own): complete, not cut */
  int comms_closed;                  /* no FINAL chunk, but every communicator the process
                                        created was destroyed/finalized/aborted (it left by
                                        _exit): complete, not cut */
  uint32_t comms_open;               /* communicators created and not ended */
  uint64_t last_realtime_ns,         /* the last CLOCK pair: the process's last sign of life */
           last_monotonic_ns;        /* (0 when the trace has none) */
  uint64_t recovered;                /* of a cut file: calls read back from its rings file
                                      * (`<file>.rings`, delivered after the last chunk) */
  int damaged;                       /* damage found (see error) */
  int stopped;                       /* a callback asked to stop */
  uint64_t error_offset;             /* byte offset of the damage */
  char error[1024];                  /* "FILE: offset N: what is wrong", empty when none (a long path and a recovery note fit) */
};


/* Reads `path`. Returns 0 when the whole file was read (it may still be truncated: see
 * status), 1 on damage, 2 when the file cannot be opened or is not a trace (bad file header
 * or unknown major version); status->error then says why. */
int ncs_trace_read(const char *path, const struct ncs_visitor *v, struct ncs_read_status *status);

/* Chunk at a time. ncs_trace_read(path, v, st) is exactly: open; while (next) {}; close.
 * ncs_trace_open checks the file header: returns 0 with *out set, or 2 (status->error says
 * why, *out NULL) as ncs_trace_read would. `v` and `st` must live until ncs_trace_close;
 * PROCESS strings live until then too. ncs_trace_next reads the next chunk with buffers `b`
 * (any set, e.g. the calling thread's; a set serves one call at a time) and delivers its
 * records: returns 1 when a chunk was delivered and more may follow, 0 when the read is over
 * (end of file, truncation, damage or a stop; status final; further calls return 0).
 * ncs_trace_park closes the file descriptor between calls (reopened by the next call), so
 * thousands of files can be open at once. ncs_trace_close frees the trace and returns
 * ncs_trace_read's result (0 read to the end, 1 damaged, 2 not readable). */
struct ncs_trace;
struct ncs_trace_bufs;
struct ncs_trace_bufs *ncs_trace_bufs_new(void); /* NULL when out of memory */
void ncs_trace_bufs_free(struct ncs_trace_bufs *b);
int ncs_trace_open(const char *path, const struct ncs_visitor *v, struct ncs_read_status *status,
                   struct ncs_trace **out);
int ncs_trace_next(struct ncs_trace *t, struct ncs_trace_bufs *b);
void ncs_trace_park(struct ncs_trace *t);
int ncs_trace_close(struct ncs_trace *t);

/* Expands PATH arguments (files, or directories scanned for *.ncs, sorted) into a list of
 * files. Returns the count, or -1 with a message on stderr for a path that does not exist or
 * is neither a directory nor a regular file (a FIFO would block the read). A *.ncs entry of a
 * directory that is not a regular file is skipped with a message naming it. Opening a trace
 * (ncs_trace_open) refuses non-regular files too, without blocking (io/regfile.h).
 * *out is malloc'ed; free with ncs_paths_free. */
int ncs_paths_expand(int npaths, char **paths, char ***out);
/* A directory with no *.ncs of its own whose subdirectories hold traces is named on stderr
 * with them and the command to read them: `ncclscope <ncs_paths_command> DIR/SUB` (main.c sets
 * it to the running command; default "report"). */
extern const char *ncs_paths_command;
void ncs_paths_free(char **files, int n);

#endif
