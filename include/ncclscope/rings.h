/* rings.h — the layout of a rings file (`<trace>.ncs.rings`, or a file in /dev/shm that
 * `<trace>.ncs.rings` links to; docs/FORMAT.md "Rings file"),
 * shared by the shim, which maps it and records into it, and the decoder, which recovers from
 * it what a killed process had recorded but not yet written as a chunk.
 *
 * Contract: the shim maps the file MAP_SHARED, so whatever a thread stored in it is kept by the
 * kernel when the process dies, even by SIGKILL. The file holds a header, the writer's chunk
 * buffer (encoded records of the chunk being built, exactly as they would be decompressed) and
 * one ring per thread (raw struct ncs_call slots). The writer publishes, in this order, the
 * length of the chunk buffer and then a ring's tail: every record a thread pushed is, at any
 * instant, in a written chunk, in the chunk buffer below its published length, or in its ring
 * at or after the published tail. Host byte order (little-endian on every supported machine),
 * fixed offsets checked below. */
#ifndef NCCLSCOPE_RINGS_H
#define NCCLSCOPE_RINGS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclscope/encode.h"

#define NCS_RINGS_MAGIC "NCSRINGS" /* 8 bytes, no NUL */
#define NCS_RINGS_VERSION 1
#define NCS_RINGS_SUFFIX ".rings"  /* appended to the trace file's name */
#define NCS_RINGS_HEADER_SIZE 4096
#define NCS_RINGS_TRACE_MAX 1024   /* bytes of the trace path kept in the header, NUL included */
/* A rings file on /dev/shm: NCS_RINGS_SHM_PREFIX uid "-" pid "-" 16 hex digits ".rings" */
#define NCS_RINGS_SHM_DIR "/dev/shm"
#define NCS_RINGS_SHM_PREFIX "ncclscope-"

/* The file header (first 4096 bytes). Fields written once at creation, except where noted. */
struct ncs_rings_header {
  char magic[8];              /* NCSRINGS */
  uint32_t version;           /* 1 */
  uint32_t header_size;       /* 4096 */
  uint32_t call_size;         /* sizeof(struct ncs_call): 96 */
  uint32_t pid;               /* the process; equal to the trace's file header pid */
  uint64_t trace_realtime_ns; /* equal to the trace's file header creation time */
  uint64_t buf_offset;        /* the writer's chunk buffer: offset and capacity in bytes */
  uint64_t buf_cap;
  uint64_t ring_offset;       /* ring i starts at ring_offset + i * ring_bytes */
  uint64_t ring_bytes;        /* one ring: its 256-byte header and ring_records slots */
  uint64_t ring_records;      /* slots per ring, a power of two */
  _Atomic uint64_t rings;     /* rings allocated in the file so far (grows) */
  _Atomic uint64_t buf_chunk; /* the chunk index the buffer is building (updated) */
  _Atomic uint64_t buf_len;   /* bytes of whole records in the buffer (updated) */
  /* Added in place (version 1 files before it hold zeros here): for a rings file on /dev/shm,
   * what a later process needs to give a dead process's file back to its trace (rings.c). */
  uint64_t pidns;             /* inode of the process's pid namespace (0: unknown) */
  char trace[NCS_RINGS_TRACE_MAX]; /* the trace file's path, NUL-terminated (updated on rename) */
};

/* One ring: a 256-byte header then `ring_records` slots. head: written by the owning thread
 * after the slot; tail: by the writer, after the chunk buffer's length. A slot below tail may
 * be overwritten by the owner at any time; slots in [tail, head) are never. */
enum { NCS_SLOT_FREE = 0, NCS_SLOT_LIVE = 1, NCS_SLOT_DEAD = 2 };
#define NCS_RING_F_MEMORY 1u /* the ring is in process memory, not in the rings file */
/* The recorded call the owner thread is inside (on the owner's cache line with `head`).
 * The owner fills the fields, then publishes `tcall` with release; at return it stores 0 and a
 * release fence, so the fields of its next call are ordered after that 0. The writer reads
 * `tcall` (acquire), the fields, an acquire fence, `tcall` again: equal and non-zero means a
 * consistent copy of a call still in flight (shim/writer.c current_read). */
struct ncs_current {
  _Atomic uint64_t tcall;           /* 0: not inside a recorded call */
  _Atomic uint64_t t_enter, seq, count, key; /* key: 0 but during an init or a split */
  _Atomic uint64_t op_dtype_comm;   /* op | datatype << 8 | comm << 32 */
  _Atomic uint64_t root_nranks;     /* (uint32)root | (uint32)nranks << 32 */
};
struct ncs_ring {
  _Atomic uint64_t head;
  struct ncs_current cur;
  _Atomic uint64_t tail;
  _Atomic uint64_t wake_at;       /* writer: the owner's push that makes head this wakes it */
  _Atomic uint64_t limit;         /* writer, pagers: the owner records only while head < limit
                                   * (the slots past it may have no memory: an idle ring's, or a
                                   * growing one's, rings.c) */
  char pad1[40];
  _Atomic uint64_t dropped;       /* owner: calls not recorded (ring full) */
  uint64_t dropped_reported;      /* writer: part of `dropped` already in a DROP record */
  _Atomic int state;              /* NCS_SLOT_* */
  uint32_t thread;                /* trace thread index of the owner */
  uint32_t announced;             /* writer: THREAD record written for `thread` */
  uint32_t mask;                  /* records - 1 */
  int32_t tid;
  char name[16];
  uint32_t flags;                 /* NCS_RING_F_* */
  uint64_t file_offset;           /* the shim's: where this ring starts in the rings file */
  _Atomic uint64_t grow_to;       /* the shim's: a new ring on /dev/shm, its pages present only
                                   * below `limit`: the pagers, or its owner, make the pages up to
                                   * this slot present and raise `limit` (rings.c); 0 once every
                                   * page is present or the ring is reserved whole */
  char pad2[256 - 200];
  struct ncs_call rec[];
};

_Static_assert(offsetof(struct ncs_rings_header, pidns) == 96 && sizeof(struct ncs_rings_header) == 96 + 8 + NCS_RINGS_TRACE_MAX &&
               sizeof(struct ncs_rings_header) <= NCS_RINGS_HEADER_SIZE, "rings header layout");
_Static_assert(sizeof(struct ncs_call) == 96, "ring slot layout (FORMAT.md)");
_Static_assert(offsetof(struct ncs_ring, cur) == 8 && offsetof(struct ncs_ring, tail) == 64, "ring layout");
_Static_assert(offsetof(struct ncs_ring, thread) == 148, "ring layout");
_Static_assert(offsetof(struct ncs_ring, name) == 164 && offsetof(struct ncs_ring, limit) == 80 &&
               offsetof(struct ncs_ring, file_offset) == 184 && offsetof(struct ncs_ring, grow_to) == 192, "ring layout");
_Static_assert(offsetof(struct ncs_ring, rec) == 256, "ring layout");
_Static_assert(offsetof(struct ncs_call, tcall) == 40 && offsetof(struct ncs_call, group) == 88,
               "ring slot layout (FORMAT.md)");

#endif
