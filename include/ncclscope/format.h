/* format.h — constants and byte-level helpers of the ncclscope trace format (docs/FORMAT.md).
 *
 * Contract: this header is the single definition of the on-disk layout shared by the shim
 * (writer) and the decoder (reader). docs/FORMAT.md is the prose specification; a change
 * here that changes bytes on disk bumps NCS_FORMAT_MINOR (compatible: new record types, new
 * trailing fields) or NCS_FORMAT_MAJOR (anything else). All integers little-endian. */
#ifndef NCCLSCOPE_FORMAT_H
#define NCCLSCOPE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NCS_FORMAT_MAJOR 5
#define NCS_FORMAT_MINOR 7
#define NCS_FORMAT_STRING "5.7"      /* MAJOR.MINOR as PROCESS's format_version */
#define NCS_FORMAT_MAJOR_OLDEST 1 /* readers still read 1.0 and 1.1 files */

/* File header: 64 bytes at offset 0. */
#define NCS_FILE_MAGIC "NCSTRACE" /* 8 bytes, no NUL */
#define NCS_FILE_HEADER_SIZE 64
/* offsets inside the file header */
#define NCS_FH_MAGIC 0        /* char[8] */
#define NCS_FH_MAJOR 8        /* u16 */
#define NCS_FH_MINOR 10       /* u16 */
#define NCS_FH_SIZE 12        /* u32 header size (64) */
#define NCS_FH_REALTIME 16    /* u64 CLOCK_REALTIME ns at creation */
#define NCS_FH_PID 24         /* u32 */
#define NCS_FH_FLAGS 28       /* u32 NCS_FILE_F_* */
#define NCS_FH_FIRST_KEPT 32  /* u64, bounded files (5.2): offset of the first chunk still kept, 0 = the header's end */
#define NCS_FILE_F_BOUNDED 1u /* NCCLSCOPE_KEEP (5.2): the file is a window of segments (docs/FORMAT.md) */

/* Chunk header: 40 bytes, followed by payload_size bytes holding one zstd frame. */
#define NCS_CHUNK_MAGIC 0x4B43534Eu /* bytes "NSCK" */
#define NCS_CHUNK_HEADER_SIZE 40
#define NCS_CH_MAGIC 0         /* u32 */
#define NCS_CH_PAYLOAD 4       /* u32 compressed bytes after the header */
#define NCS_CH_RAW 8           /* u32 decompressed bytes */
#define NCS_CH_RECORDS 12      /* u32 records in the chunk */
#define NCS_CH_INDEX 16        /* u64 chunk number in this file, from 0 */
#define NCS_CH_DROPPED 24      /* u64 records dropped by the process so far (cumulative) */
#define NCS_CH_CHECKSUM 32     /* u32 over header bytes 0..31, then the payload: ncs_chunk_sum */
#define NCS_CH_FLAGS 36        /* u32 NCS_CHUNK_F_* */
#define NCS_CHUNK_F_FINAL 1u   /* written by a clean shutdown: nothing follows */
#define NCS_CHUNK_F_REOPENED 2u /* the writer's descriptor stopped being the trace's (the application
                                  * closed or reused it) and this chunk went through a new one */
#define NCS_CHUNK_F_COLUMNS 4u /* the payload is columns (columns.h), not one zstd frame of rows; 2.0 */
#define NCS_CHUNK_F_EXEC 8u    /* the last chunk of a process image that called exec (the same pid
                                  goes on as a new image, in a file of its own); 5.1 */
#define NCS_CHUNK_F_SEGMENT 16u /* bounded files (5.2): a segment's first chunk, the process's state and
                                   AGGREGATE records of every call before it; nothing else */
#define NCS_CHUNK_F_IDLE 32u   /* (5.6) a heartbeat alone (a CLOCK: no call, no record, nothing in
                                  flight): the writer's next chunk may come NCS_IDLE_BEAT_MS later */
#define NCS_CHUNK_F_KERNELS 64u /* (5.7) KERNEL records alone, set apart from the row chunk right before
                                   it (same flush, columns): read as the end of that chunk */
/* The writer's cadence (docs/FORMAT.md "Truncation and damage"): a chunk every flush period
 * (NCCLSCOPE_FLUSH_MS, 10..1000 ms) while it has anything to write or a call is in flight; after
 * a chunk that is a heartbeat alone (a CLOCK, no other record: nothing in flight; flagged
 * NCS_CHUNK_F_IDLE, 5.6), the next one NCS_IDLE_BEAT_MS later, or within a flush period of the
 * next record. Readers that judge a silent process (analysis/hang.c) allow for it. */
#define NCS_IDLE_BEAT_MS 2000
#define NCS_CHUNK_MAX_RAW (64u << 20)      /* readers reject larger chunks as corrupt */
#define NCS_CHUNK_MAX_PAYLOAD (64u << 20)

/* Record types. A record is: varint type, varint body length, body. Readers skip types they
 * do not know. Fields are appended over time: a reader ignores body bytes after the fields
 * it knows, and a field missing at the end of a body reads as 0 / empty. */
enum ncs_rec {
  NCS_REC_PROCESS = 1,   /* key/value pairs describing the process */
  NCS_REC_THREAD = 2,    /* a thread index and its OS tid and name */
  NCS_REC_COMM = 3,      /* a communicator created (or a failed attempt) */
  NCS_REC_COMM_END = 4,  /* finalize / destroy / abort / revoke of a communicator */
  NCS_REC_CALL = 5,      /* one NCCL call, delta-encoded against the previous CALL */
  NCS_REC_CALLSITE = 6,  /* a call-site id and its frames */
  NCS_REC_MODULE = 7,    /* a loaded object referenced by call-site frames */
  NCS_REC_DROP = 8,      /* records the process had to drop, by reason */
  NCS_REC_CLOCK = 9,     /* a (realtime, monotonic) clock pair */
  NCS_REC_GPU_TIME = 10, /* GPU start/end of a call or of a group */
  NCS_REC_NCCL_LOG = 11, /* one line of NCCL's debug log, captured */
  NCS_REC_TOPO_GPU = 12, /* one GPU seen through NVML */
  NCS_REC_TOPO_LINK = 13,/* the link between two GPUs */
  NCS_REC_PROFILE = 14,  /* per-collective algorithm/protocol from NCCL's profiler plugin */
  NCS_REC_KERNEL = 15,   /* a kernel, copy or set the GPU ran (CUPTI activity), since 1.1 */
  NCS_REC_KERNEL_NAME = 16, /* a kernel name id and its class, since 1.1 */
  NCS_REC_KERNEL_STATUS = 17, /* kernel activity on / off / stood aside, and why, since 1.1 */
  NCS_REC_INFLIGHT = 18, /* a call in flight when its chunk was written, since 1.1 */
  NCS_REC_PROFILE_ID = 19, /* a PROFILE with its names as ids (every field a varint), since 3.1 */
  NCS_REC_CALL_RUN = 20, /* calls like the chunk's last CALL but for their times (row chunks), since 5.0 */
  NCS_REC_AGGREGATE = 21, /* whole-run figures of one (communicator, op, datatype, size) in a bounded file, since 5.2 */
  NCS_REC_DEVCOMM = 22,  /* a device communicator created or destroyed (ncclDevCommCreate/Destroy), since 5.3 */
  NCS_REC_AGG_KERNELS = 23 /* whole-run GPU communication and exposed time in a bounded file, since 5.5 */
};

/* CALL flags */
#define NCS_CALL_F_CAPTURED 1u    /* stream was capturing a CUDA graph */
#define NCS_CALL_F_INPROGRESS 2u  /* returned ncclInProgress (non-blocking communicator) */
#define NCS_CALL_F_INPLACE 4u     /* a collective run in place (NCCL's definition per op), since 5.1 */
#define NCS_CALL_F_OUTOFPLACE 8u  /* a collective run out of place, since 5.1; neither bit: unknown
                                     (a 5.0 trace, Send / Recv, a rank the shim did not know) */
/* INFLIGHT kinds */
#define NCS_INFLIGHT_HOST 0u      /* inside the NCCL function on the host */
#define NCS_INFLIGHT_GPU 1u       /* returned, its GPU work not finished */

/* DROP reasons */
enum ncs_drop_reason {
  NCS_DROP_BUFFER_FULL = 1,  /* a thread's buffer was full */
  NCS_DROP_NO_THREAD_SLOT = 2, /* more threads than the shim keeps buffers for */
  NCS_DROP_WRITE_FAILED = 3, /* a chunk could not be written (EIO, ENOSPC, EFBIG, ...) */
  NCS_DROP_NO_MEMORY = 4,    /* an allocation failed */
  NCS_DROP_EVENT_POOL = 5,   /* no GPU event free: call recorded without GPU time */
  NCS_DROP_KERNEL_RECORDS = 6, /* kernel activity records CUPTI dropped (no buffer free) */
  NCS_DROP_DISK_FULL = 7,    /* calls (not records) of chunks lost because the trace's file system
                                was full (ENOSPC, EDQUOT); their other records count under 3 */
  NCS_DROP_REASON_LIMIT       /* one past the last reason */
};

/* GPU_TIME kinds and sources */
#define NCS_GPU_KIND_CALL 0
#define NCS_GPU_KIND_GROUP 1
#define NCS_GPU_F_FAILED 1u    /* event query failed: no GPU time */
#define NCS_GPU_F_CAPTURED 2u  /* in a captured graph: no GPU time */

/* The resolutions the shim stores GPU times at (format 2.0; docs/FORMAT.md, "Resolution of
 * stored times"): times are rounded up to a multiple of them. GPU_TIME (PROCESS key
 * gpu_resolution_ns): CUDA events resolve about 0.5 us, so 256 ns loses nothing they measured.
 * KERNEL (PROCESS key kernel_resolution_ns): CUPTI reads the GPU's global timer, which
 * advances in steps of tens of nanoseconds on recent GPUs, so 32 ns. */
#define NCS_GPU_RESOLUTION_NS 256u
#define NCS_KERNEL_RESOLUTION_NS 32u
static inline uint64_t ncs_round_up(uint64_t t, uint64_t res) { /* res: a power of two */
  return t > UINT64_MAX - res ? t : (t + res - 1) & ~(res - 1);
}
static inline uint64_t ncs_gpu_round(uint64_t t) { return ncs_round_up(t, NCS_GPU_RESOLUTION_NS); }
static inline uint64_t ncs_kernel_round(uint64_t t) { return ncs_round_up(t, NCS_KERNEL_RESOLUTION_NS); }

/* ---- byte helpers (both sides) ---- */
static inline void ncs_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void ncs_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void ncs_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t ncs_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ncs_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ncs_get_u64(const uint8_t *p) {
  return (uint64_t)ncs_get_u32(p) | ((uint64_t)ncs_get_u32(p + 4) << 32);
}

/* FNV-1a 32-bit, continued from `h` (start with NCS_FNV_INIT). */
#define NCS_FNV_INIT 0x811c9dc5u
static inline uint32_t ncs_fnv1a(uint32_t h, const void *data, size_t n) {
  const uint8_t *p = (const uint8_t *)data;
  size_t i = 0;
#define NCS_FNV_STEP_(k) h ^= p[i + (k)]; h *= 0x01000193u;
  for (; i + 8 <= n; i += 8) { /* the same bytes in the same order, fewer loop steps */
    NCS_FNV_STEP_(0) NCS_FNV_STEP_(1) NCS_FNV_STEP_(2) NCS_FNV_STEP_(3)
    NCS_FNV_STEP_(4) NCS_FNV_STEP_(5) NCS_FNV_STEP_(6) NCS_FNV_STEP_(7)
  }
#undef NCS_FNV_STEP_
  for (; i < n; i++) { h ^= p[i]; h *= 0x01000193u; }
  return h;
}

/* The chunk checksum of format 4.0 on: four 64-bit lanes, each fed every fourth little-endian
 * 64-bit word of the bytes (header bytes 0..31, then the payload; the last partial 32-byte
 * stripe padded with zeros), then folded with the byte count to 32 bits (docs/FORMAT.md). Where
 * FNV-1a waits for one multiply per byte, the lanes go on side by side: about 0.2 cycles a byte. */
#define NCS_SUM_K1 0x9e3779b97f4a7c15ull
#define NCS_SUM_K2 0xff51afd7ed558ccdull
#define NCS_SUM_LANE_(v, w) ((v) = ((v) ^ (w)) * NCS_SUM_K1, (v) ^= (v) >> 29)
static inline void ncs_sum_stripes_(uint64_t v[4], const uint8_t *p, size_t n) {
  uint64_t a = v[0], b = v[1], c = v[2], d = v[3];
  for (size_t i = 0; i + 32 <= n; i += 32) {
    NCS_SUM_LANE_(a, ncs_get_u64(p + i));
    NCS_SUM_LANE_(b, ncs_get_u64(p + i + 8));
    NCS_SUM_LANE_(c, ncs_get_u64(p + i + 16));
    NCS_SUM_LANE_(d, ncs_get_u64(p + i + 24));
  }
  v[0] = a, v[1] = b, v[2] = c, v[3] = d;
}
static inline uint32_t ncs_sum_lanes(const uint8_t head[32], const void *payload, size_t n) {
  const uint8_t *p = (const uint8_t *)payload;
  uint64_t v[4] = {NCS_SUM_K1, NCS_SUM_K2, NCS_SUM_K1 ^ NCS_SUM_K2, NCS_SUM_K1 + NCS_SUM_K2};
  ncs_sum_stripes_(v, head, 32);
  ncs_sum_stripes_(v, p, n);
  uint8_t tail[32] = {0};
  if (n & 31) memcpy(tail, p + (n & ~(size_t)31), n & 31);
  ncs_sum_stripes_(v, tail, 32);
  uint64_t h = (uint64_t)n + 32;
  for (int i = 0; i < 4; i++) NCS_SUM_LANE_(h, v[i]);
  h *= NCS_SUM_K2;
  h ^= h >> 32;
  return (uint32_t)h;
}
#undef NCS_SUM_LANE_

/* The checksum of a chunk of a file of format `major`: FNV-1a 32 before 4.0, the lanes since. */
static inline uint32_t ncs_chunk_sum(unsigned major, const uint8_t head[32], const void *payload, size_t n) {
  return major >= 4 ? ncs_sum_lanes(head, payload, n) : ncs_fnv1a(ncs_fnv1a(NCS_FNV_INIT, head, 32), payload, n);
}

/* Unsigned LEB128. Writes at most 10 bytes; returns bytes written. */
static inline size_t ncs_put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) { p[n++] = (uint8_t)(v | 0x80); v >>= 7; }
  p[n++] = (uint8_t)v;
  return n;
}
static inline uint64_t ncs_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t ncs_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Reads a varint from [*pp, end). Returns 0 and advances *pp, or -1 when the bytes end first
 * or the value runs past 10 bytes. */
static inline int ncs_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (p >= end) return -1;
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) { *pp = p; *out = v; return 0; }
  }
  return -1;
}

#endif
