/* records.h — every trace record, declared once: its struct, and the list of its fields in
 * on-disk order with their encoding (docs/FORMAT.md, docs/FORMAT-TOPO.md).
 *
 * Contract: this is the only place that says what a record holds and how its body is laid
 * out. ncclscope/encode.h expands the lists below into the encoders (shim, synth, tests,
 * fuzzers) and the decoders (decoder/io/trace.c, model/topo.c, analysis/profile.c); nobody writes a field
 * order by hand. The structs are the in-memory shape shared by the shim's ring, the writers
 * and the decoder's visitors; a member that is not in the record's list is not written.
 * (CALL_RUN, format 5.0, is no list of fields: it stands for CALL records, and encode.h codes it
 * beside CALL's memo.)
 *
 * A field list is  NCS_FIELDS_<name>(F)  with one  F(KIND, member, arg)  per field:
 *   KIND   member type       on disk                                      arg
 *   U32    uint32_t          varint (a decoded value keeps its low 32 bits) value when absent
 *   I32    int32_t           zigzag varint                                value when absent
 *   U64    uint64_t          varint                                       value when absent
 *   FIX64  uint64_t          8 bytes little-endian                        value when absent
 *   DELTA  uint64_t          zigzag varint of the change since the same   0
 *                            field of the previous record in the chunk
 *   SPAN   uint64_t (end)    DELTA of (member - arg): an interval's end   the start member
 *   STR    const char *      varint length + bytes (NULL writes "")       0
 *   STRN   const char *      as STR; its length is member `arg`           the length member
 *                            (may hold NULs)
 *   CHARS  char[N]           as STR; decoded cut to N-1 bytes, NUL-ended  0
 *   ARRAY  const struct      varint count (member n<member>) then each    the element's name
 *          ncs_<arg> *       element's fields
 * A body ending before a field reads it as `arg` (numbers) / "" (strings) / 0 (the rest);
 * bytes after the last known field are ignored. So fields are only ever appended.
 *
 * NCS_RECORDS(R) lists the records: R(TYPE, name, STATE, READ) for NCS_REC_<TYPE> (format.h),
 * struct ncs_<name>, NCS_FIELDS_<name>; STATE is DELTA when the record has DELTA or SPAN
 * fields (its coders take the chunk's struct ncs_call_delta), else PLAIN. READ says how the
 * decoder's reader (decoder/io/trace.h) hands it to a visitor: VISIT, decoded, to the
 * visitor's callback `name` (a DELTA record also to the run callback `name`s); RAW, its body
 * undecoded, to the callback `raw`; PROCESS, merged with the file header into struct
 * ncs_process, to `process`. The visitor's members, the reader's dispatch and the fan-out
 * (decoder/io/mux.c) are expanded from this list.
 *
 * Adding a record: a type number in format.h's enum, a struct and a field list here, a line
 * in NCS_RECORDS, its prose in docs/FORMAT.md. Adding a field: append it to the end of the
 * list (and of the struct). */
#ifndef NCCLSCOPE_RECORDS_H
#define NCCLSCOPE_RECORDS_H

#include <stddef.h>
#include <stdint.h>

/* 1 PROCESS: key/value pairs describing the process. */
struct ncs_kv { const char *key, *value; size_t value_len; }; /* key NUL-terminated */
#define NCS_FIELDS_kv(F) \
  F(STR, key, 0) \
  F(STRN, value, value_len) /* may hold NULs (cmdline); decoded also NUL-terminated */
struct ncs_process_kv { uint32_t nkv; const struct ncs_kv *kv; };
#define NCS_FIELDS_process_kv(F) \
  F(ARRAY, kv, kv)

/* The environment variables a PROCESS record carries as `env.NAME` keys besides every NCCL_*
 * and NCCLSCOPE_* variable (docs/FORMAT.md): the launcher's rank variables, and the ids that
 * say which job and which attempt of it a process belongs to (decoder/model/jobs.c). The shim
 * only reads them, once, at activation (shim/state.c); nothing else from the environment is
 * recorded. One X(name) per variable; append only. */
#define NCS_PROCESS_ENV(X) \
  X(RANK) X(LOCAL_RANK) X(WORLD_SIZE) X(LOCAL_WORLD_SIZE) X(GROUP_RANK) X(NODE_RANK) \
  X(MASTER_ADDR) X(MASTER_PORT) X(SLURM_PROCID) X(SLURM_LOCALID) X(SLURM_NTASKS) X(SLURM_JOB_ID) \
  X(SLURM_NODEID) X(OMPI_COMM_WORLD_RANK) X(OMPI_COMM_WORLD_SIZE) X(OMPI_COMM_WORLD_LOCAL_RANK) \
  X(PMI_RANK) X(PMI_SIZE) X(PMIX_RANK) X(MV2_COMM_WORLD_RANK) X(JAX_PROCESS_ID) \
  X(CUDA_VISIBLE_DEVICES) X(NVIDIA_VISIBLE_DEVICES) \
  /* job and attempt ids: torchrun / torchelastic, Slurm steps and arrays, \
   * Open MPI and PMIx, PBS, LSF, Flux, JAX's coordinator */ \
  X(TORCHELASTIC_RUN_ID) X(TORCHELASTIC_RESTART_COUNT) X(TORCHELASTIC_MAX_RESTARTS) \
  X(SLURM_STEP_ID) X(SLURM_ARRAY_JOB_ID) X(SLURM_ARRAY_TASK_ID) X(OMPI_MCA_ess_base_jobid) \
  X(PMIX_NAMESPACE) X(PBS_JOBID) X(LSB_JOBID) X(FLUX_JOB_ID) X(JAX_COORDINATOR_ADDRESS)

/* 2 THREAD: a thread index and its OS tid and name. */
struct ncs_thread { uint32_t thread; uint64_t tid; const char *name; uint32_t flags; };
#define NCS_FIELDS_thread(F) \
  F(U32, thread, 0) \
  F(U64, tid, 0) \
  F(STR, name, 0) \
  F(U32, flags, 0)       /* NCS_THREAD_F_* */
#define NCS_THREAD_F_NOT_CRASH_SAFE 1u /* its ring is in process memory: lost on kill -9 */

/* 3 COMM: a communicator created (or a failed attempt). */
struct ncs_comm {
  uint32_t comm, init_op, flags, thread;
  uint64_t comm_id, handle, parent_id, t_enter, t_exit;
  int32_t rank, nranks, device, rc;
  char name[64];         /* 5.4: ncclConfig_t's commName, "" when the job gave none */
  int32_t color;         /* 5.4: CommSplit's color, -1 when not a split (or an older file) */
};
#define NCS_FIELDS_comm(F) \
  F(U32, comm, 0)        /* the shim's index of the communicator in this process */ \
  F(FIX64, comm_id, 0)   /* hash of the ncclUniqueId: the same on every rank */ \
  F(U64, handle, 0)      /* the ncclComm_t pointer */ \
  F(I32, rank, 0) \
  F(I32, nranks, 0) \
  F(I32, device, 0) \
  F(U32, init_op, 0)     /* enum ncs_op that created it */ \
  F(FIX64, parent_id, 0) /* comm_id of the parent (split, shrink), else 0 */ \
  F(U32, flags, 0) \
  F(I32, rc, 0) \
  F(U64, t_enter, 0) \
  F(U64, t_exit, 0) \
  F(U32, thread, 0) \
  F(CHARS, name, 0)      /* 5.4 */ \
  F(I32, color, -1)      /* 5.4 */

/* 4 COMM_END: finalize / destroy / abort / revoke of a communicator. */
struct ncs_comm_end { uint32_t comm, op, thread; int32_t rc; uint64_t t_enter, t_exit; };
#define NCS_FIELDS_comm_end(F) \
  F(U32, comm, 0) \
  F(U32, op, 0) \
  F(I32, rc, 0) \
  F(U64, t_enter, 0) \
  F(U64, t_exit, 0) \
  F(U32, thread, 0)

/* 5 CALL: one NCCL call. Most fields are DELTA: the chunk's previous CALL is the base. */
struct ncs_call {
  uint32_t op, thread, comm, datatype, redop, depth, callsite, flags;
  int32_t root, rc;
  uint64_t tcall, seq, count, stream, t_enter, t_exit, group;
};
#define NCS_FIELDS_call(F) \
  F(U32, op, 0) \
  F(U32, thread, 0) \
  F(DELTA, tcall, 0)     /* the thread's call counter */ \
  F(U32, comm, 0) \
  F(DELTA, seq, 0)       /* the communicator's call counter */ \
  F(DELTA, count, 0) \
  F(U32, datatype, 0) \
  F(U32, redop, 0) \
  F(I32, root, 0) \
  F(DELTA, stream, 0) \
  F(DELTA, t_enter, 0) \
  F(SPAN, t_exit, t_enter) /* stored as the duration */ \
  F(I32, rc, 0) \
  F(U32, depth, 0)       /* group nesting depth */ \
  F(DELTA, group, 0) \
  F(U32, callsite, 0) \
  F(U32, flags, 0)       /* NCS_CALL_F_* */

/* 6 CALLSITE: a call-site id and its frames. */
struct ncs_frame { uint32_t module; uint64_t offset, symbol_offset; const char *symbol; };
#define NCS_FIELDS_frame(F) \
  F(U32, module, 0) \
  F(U64, offset, 0) \
  F(STR, symbol, 0) \
  F(U64, symbol_offset, 0)
struct ncs_callsite { uint32_t id, nframes; const struct ncs_frame *frames; };
#define NCS_FIELDS_callsite(F) \
  F(U32, id, 0) \
  F(ARRAY, frames, frame)

/* 7 MODULE: a loaded object referenced by call-site frames. */
struct ncs_module { uint32_t module; uint64_t base; const char *path; char build_id[41]; };
#define NCS_FIELDS_module(F) \
  F(U32, module, 0) \
  F(U64, base, 0) \
  F(STR, path, 0) \
  F(CHARS, build_id, 0)  /* 5.4: the object's GNU build id in hex, "" when it has none */

/* 8 DROP: records the process had to drop, by reason. */
struct ncs_drop { uint32_t reason, thread; uint64_t records; };
#define NCS_FIELDS_drop(F) \
  F(U32, reason, 0)      /* enum ncs_drop_reason */ \
  F(U64, records, 0) \
  F(U32, thread, 0)

/* 9 CLOCK: a (realtime, monotonic) clock pair. */
struct ncs_clock { uint64_t realtime_ns, monotonic_ns, uncertainty_ns; };
#define NCS_FIELDS_clock(F) \
  F(U64, realtime_ns, 0) \
  F(U64, monotonic_ns, 0) \
  F(U64, uncertainty_ns, 0)

/* 10 GPU_TIME: GPU start/end of a call or of a group. */
struct ncs_gpu_time { uint32_t kind, thread, flags; uint64_t ref, gpu_start, gpu_end; };
#define NCS_FIELDS_gpu_time(F) \
  F(U32, kind, 0)        /* NCS_GPU_KIND_* */ \
  F(U32, thread, 0) \
  F(DELTA, ref, 0)       /* the call's tcall (kind call) or group id (kind group) */ \
  F(DELTA, gpu_start, 0) \
  F(SPAN, gpu_end, gpu_start) \
  F(U32, flags, 0)       /* NCS_GPU_F_* */

/* 11 NCCL_LOG: one line of NCCL's debug log (no newline). */
struct ncs_log_line { uint64_t t; const char *line; size_t len; };
#define NCS_FIELDS_log_line(F) \
  F(U64, t, 0) \
  F(STRN, line, len)

/* 12 TOPO_GPU, 13 TOPO_LINK (docs/FORMAT-TOPO.md). PCIe relationship between two GPUs:
 * NVML's nvmlGpuTopologyLevel_t values. */
enum ncs_pcie_rel {
  NCS_REL_X = 0,      /* NVML_TOPOLOGY_INTERNAL: the same GPU */
  NCS_REL_PIX = 10,   /* NVML_TOPOLOGY_SINGLE: one PCIe switch */
  NCS_REL_PXB = 20,   /* NVML_TOPOLOGY_MULTIPLE: several PCIe switches, no host bridge */
  NCS_REL_PHB = 30,   /* NVML_TOPOLOGY_HOSTBRIDGE: through a PCIe host bridge */
  NCS_REL_NODE = 40,  /* NVML_TOPOLOGY_NODE: host bridges of one NUMA node */
  NCS_REL_SYS = 50,   /* NVML_TOPOLOGY_SYSTEM: across NUMA nodes (SMP interconnect) */
  NCS_REL_UNKNOWN = 255
};
static inline const char *ncs_pcie_rel_name(unsigned rel) {
  switch (rel) {
  case NCS_REL_X: return "X";
  case NCS_REL_PIX: return "PIX";
  case NCS_REL_PXB: return "PXB";
  case NCS_REL_PHB: return "PHB";
  case NCS_REL_NODE: return "NODE";
  case NCS_REL_SYS: return "SYS";
  default: return "?";
  }
}
struct ncs_topo_gpu {
  uint32_t index;            /* NVML index */
  char name[64];
  char bus_id[32];           /* NVML's busId, "00000000:1A:00.0" */
  char uuid[64];
  uint32_t pcie_gen, pcie_width;          /* current link */
  uint32_t pcie_gen_max, pcie_width_max;  /* maximum of the link */
  uint32_t nvlinks;          /* NVLinks in state active */
};
#define NCS_FIELDS_topo_gpu(F) \
  F(U32, index, 0) \
  F(CHARS, name, 0) \
  F(CHARS, bus_id, 0) \
  F(CHARS, uuid, 0) \
  F(U32, pcie_gen, 0) \
  F(U32, pcie_width, 0) \
  F(U32, pcie_gen_max, 0) \
  F(U32, pcie_width_max, 0) \
  F(U32, nvlinks, 0)
struct ncs_topo_link {
  uint32_t a, b;             /* NVML indexes, a < b */
  uint32_t nvlinks;          /* active NVLinks of a whose remote end is b (nvidia-smi's NV#) */
  uint32_t pcie;             /* enum ncs_pcie_rel */
  uint32_t p2p_read;         /* nvmlGpuP2PStatus_t for P2P read (0 = OK), 255 unknown */
  uint32_t p2p_nvlink;       /* nvmlGpuP2PStatus_t for P2P over NVLink (0 = OK), 255 unknown */
};
#define NCS_FIELDS_topo_link(F) \
  F(U32, a, 0) \
  F(U32, b, 0) \
  F(U32, nvlinks, 0) \
  F(U32, pcie, NCS_REL_UNKNOWN) \
  F(U32, p2p_read, 255) \
  F(U32, p2p_nvlink, 255)

/* 14 PROFILE: one collective as NCCL described it to its profiler plugin (shim/profiler.c). */
#define NCS_PROF_STR 24 /* func, algo, proto, datatype: NCCL's names are short ("ReduceScatter") */
struct ncs_profile {
  uint64_t comm_hash;      /* NCCL's commHash as handed to the plugin's init (not COMM's comm_id) */
  int32_t rank;            /* rank in that communicator */
  uint32_t nranks;
  uint64_t seq;            /* NCCL's per-communicator, per-function sequence number */
  char func[NCS_PROF_STR]; /* "AllReduce", "Broadcast", ... as NCCL names it */
  char algo[NCS_PROF_STR]; /* "Ring", "Tree", "CollNetDirect", "NVLS", "PAT", ... */
  char proto[NCS_PROF_STR];/* "LL", "LL128", "Simple" */
  uint32_t nchannels, nwarps;
  uint64_t count;          /* elements */
  char datatype[NCS_PROF_STR]; /* NCCL's name, e.g. "ncclFloat32" */
  int32_t root;
  uint64_t t;              /* CLOCK_MONOTONIC ns at startEvent */
  uint64_t dropped;        /* collective events this process lost before this one (ring full) */
  uint32_t version;        /* profiler interface version NCCL used: 5 or 4 */
};
#define NCS_FIELDS_profile(F) \
  F(U64, comm_hash, 0) \
  F(I32, rank, 0) \
  F(U32, nranks, 0) \
  F(U64, seq, 0) \
  F(CHARS, func, 0) \
  F(CHARS, algo, 0) \
  F(CHARS, proto, 0) \
  F(U32, nchannels, 0) \
  F(U32, nwarps, 0) \
  F(U64, count, 0) \
  F(CHARS, datatype, 0) \
  F(I32, root, 0) \
  F(U64, t, 0) \
  F(U64, dropped, 0) \
  F(U32, version, 0)

/* 15 KERNEL: a kernel, copy or set the GPU ran, from CUPTI's activity API (shim/kernels.c),
 * since 1.1. Times are the trace's monotonic ns (the shim converts CUPTI's clock). */
enum ncs_kernel_class {
  NCS_KCLASS_COMPUTE = 0, /* any kernel that is not NCCL's */
  NCS_KCLASS_NCCL = 1,    /* ncclKernel_* / ncclDevKernel_* (ncs_is_nccl_kernel, cupti_abi.h) */
  NCS_KCLASS_MEMCPY = 2,  /* an asynchronous copy */
  NCS_KCLASS_MEMSET = 3,  /* an asynchronous set */
  NCS_KCLASS_COUNT
};
struct ncs_kernel {
  uint32_t kclass, device, stream; /* stream: CUPTI's stream id, not CALL's cudaStream_t */
  uint64_t start, duration;
  uint32_t name;                   /* KERNEL_NAME id, 0 = none */
  uint64_t bytes;                  /* copies and sets */
  uint32_t correlation;            /* CUPTI's correlation id */
};
#define NCS_FIELDS_kernel(F) \
  F(U32, kclass, 0) \
  F(U32, device, 0) \
  F(U32, stream, 0) \
  F(U64, start, 0) \
  F(U64, duration, 0) \
  F(U32, name, 0) \
  F(U64, bytes, 0) \
  F(U32, correlation, 0)

/* 16 KERNEL_NAME: a kernel name id, once per file before its first use. */
#define NCS_KERNEL_NAME_MAX 256 /* longer names are cut (C++ names can be kilobytes) */
struct ncs_kernel_name { uint32_t id, kclass; char name[NCS_KERNEL_NAME_MAX]; };
#define NCS_FIELDS_kernel_name(F) \
  F(U32, id, 0) \
  F(U32, kclass, 0) \
  F(CHARS, name, 0)

/* 17 KERNEL_STATUS: kernel activity on, off or stood aside (another CUPTI client), and why. */
enum ncs_kernel_state { NCS_KSTATE_OFF = 0, NCS_KSTATE_ON = 1, NCS_KSTATE_STOOD_ASIDE = 2 };
struct ncs_kernel_status { uint64_t t; uint32_t state; uint64_t lost; char reason[160]; };
#define NCS_FIELDS_kernel_status(F) \
  F(U64, t, 0) \
  F(U32, state, 0) \
  F(U64, lost, 0) /* reserved */ \
  F(CHARS, reason, 0)

/* Every record: R(TYPE, name, STATE). Elements of ARRAY fields (kv, frame) are listed in
 * NCS_ELEMENTS(E) as E(name). */
/* 15 INFLIGHT: a call not finished when its chunk was written (docs/FORMAT.md). Every chunk
 * ends with them, then its CLOCK. Kind NCS_INFLIGHT_HOST: inside the NCCL function; kind
 * NCS_INFLIGHT_GPU: returned, its GPU work not finished (tcall = the GPU_TIME ref, key = the
 * GPU_TIME kind). */
struct ncs_inflight {
  uint32_t kind, thread, op, comm, datatype;
  int32_t root, nranks;
  uint64_t tcall, seq, count, key, t_enter, t_seen, gpu_since;
};
#define NCS_FIELDS_inflight(F) \
  F(U32, kind, 0)        /* NCS_INFLIGHT_* */ \
  F(U32, thread, 0) \
  F(U64, tcall, 0)       /* host: the call's tcall; GPU: the GPU_TIME ref it waits for */ \
  F(U32, op, 0)          /* host: enum ncs_op */ \
  F(U32, comm, 0)        /* host: the communicator index (split: the parent; init: 0) */ \
  F(U64, seq, 0)         /* host: sequence number; split/shrink: the parent's split number */ \
  F(U64, count, 0) \
  F(U32, datatype, 255) \
  F(I32, root, -1)       /* root or peer; init: the rank passed */ \
  F(I32, nranks, 0)      /* init: the nranks passed */ \
  F(U64, key, 0)         /* init: unique-id hash; split: the parent's comm_id; GPU: GPU_TIME kind */ \
  F(U64, t_enter, 0)     /* monotonic ns: entered (GPU: just before its start event) */ \
  F(U64, t_seen, 0)      /* monotonic ns of the snapshot */ \
  F(U64, gpu_since, 0)   /* GPU: when its work started on the GPU, 0 not started */

/* 19 PROFILE_ID (format 3.1): a PROFILE whose four names are ids in NCS_PROFILE_NAMES (0 =
 * the empty name), so that every field is a varint and the record is stored in columns
 * (columns.h); the shim writes a PROFILE instead when a name is not in the list. */
struct ncs_profile_id {
  uint64_t comm_hash;
  int32_t rank;
  uint32_t nranks;
  uint64_t seq;
  uint32_t func, algo, proto; /* name ids */
  uint32_t nchannels, nwarps;
  uint64_t count;
  uint32_t datatype;          /* name id */
  int32_t root;
  uint64_t t;
  uint64_t dropped;
  uint32_t version;
};
#define NCS_FIELDS_profile_id(F) \
  F(U64, comm_hash, 0) \
  F(I32, rank, 0) \
  F(U32, nranks, 0) \
  F(U64, seq, 0) \
  F(U32, func, 0) \
  F(U32, algo, 0) \
  F(U32, proto, 0) \
  F(U32, nchannels, 0) \
  F(U32, nwarps, 0) \
  F(U64, count, 0) \
  F(U32, datatype, 0) \
  F(I32, root, 0) \
  F(U64, t, 0) \
  F(U64, dropped, 0) \
  F(U32, version, 0)
/* The names a PROFILE_ID refers to, id 1 upwards, as NCCL's profiler hands them to a plugin
 * (its function, algorithm, protocol and datatype names, with the spellings of NCCL versions
 * that differ). Append only: an id is never reused or renumbered (docs/FORMAT-TOPO.md). */
#define NCS_PROFILE_NAMES(X) \
  X("AllReduce") X("Broadcast") X("Reduce") X("AllGather") X("ReduceScatter") X("SendRecv") \
  X("Send") X("Recv") X("AllToAll") X("Gather") X("Scatter") \
  X("Tree") X("Ring") X("CollnetDirect") X("CollnetChain") X("CollNetDirect") X("CollNetChain") \
  X("NVLS") X("NVLSTree") X("PAT") X("TREE") X("RING") X("COLLNET_DIRECT") X("COLLNET_CHAIN") \
  X("NVLS_TREE") \
  X("LL") X("LL128") X("Simple") X("SIMPLE") \
  X("ncclInt8") X("ncclUint8") X("ncclInt32") X("ncclUint32") X("ncclInt64") X("ncclUint64") \
  X("ncclFloat16") X("ncclFloat32") X("ncclFloat64") X("ncclBfloat16") X("ncclFloat8e4m3") \
  X("ncclFloat8e5m2")

/* 21 AGGREGATE (format 5.2, bounded files only): the whole-run figures of the calls of one
 * (communicator, op, datatype, size class) made before the SEGMENT chunk holding it (docs/FORMAT.md,
 * "Bounded files"). comm NCS_AGG_OTHER: calls beyond the writer's table, all keys together.
 * hist: GPU durations in log4 buckets, hist0 < 1 us, histK in [4^(K-1), 4^K) us, hist9 >= 4^8 us. */
#define NCS_AGG_OTHER 0xffffffffu
#define NCS_AGG_BUCKETS 10
struct ncs_aggregate {
  uint32_t comm, op, datatype, size_log2; /* size class: floor(log2(count)), 0 for count 0 or 1 */
  uint64_t calls, count;                  /* calls, and their elements summed */
  uint64_t host_ns;                       /* host time (t_exit - t_enter) summed */
  uint64_t gpu_calls, gpu_count, gpu_ns;  /* the calls with a GPU time: calls, elements, GPU time */
  uint64_t t_first, t_last;               /* monotonic ns: the first and the last call's entry */
  uint64_t failed;                        /* calls that returned an error */
  uint64_t hist0, hist1, hist2, hist3, hist4, hist5, hist6, hist7, hist8, hist9;
};
#define NCS_FIELDS_aggregate(F) \
  F(U32, comm, 0) \
  F(U32, op, 0) \
  F(U32, datatype, 0) \
  F(U32, size_log2, 0) \
  F(U64, calls, 0) \
  F(U64, count, 0) \
  F(U64, host_ns, 0) \
  F(U64, gpu_calls, 0) \
  F(U64, gpu_count, 0) \
  F(U64, gpu_ns, 0) \
  F(U64, t_first, 0) \
  F(U64, t_last, 0) \
  F(U64, failed, 0) \
  F(U64, hist0, 0) F(U64, hist1, 0) F(U64, hist2, 0) F(U64, hist3, 0) F(U64, hist4, 0) \
  F(U64, hist5, 0) F(U64, hist6, 0) F(U64, hist7, 0) F(U64, hist8, 0) F(U64, hist9, 0)

/* 23 AGG_KERNELS (format 5.5, bounded files only): the whole run's kernel activity before
 * `until`, beside the AGGREGATE records of a SEGMENT chunk: the union of the NCCL kernels and its
 * part with no other kernel, copy or set beside it (exposed), over [first kernel, until). The
 * KERNEL records that follow it in the chunk are those still waiting, cut to start at `until`;
 * a reader adds what the window's kernels ran from `until` on (docs/FORMAT.md). */
struct ncs_agg_kernels {
  uint64_t until, comm_ns, exposed_ns, kernels; /* kernels: KERNEL records taken before the chunk */
};
#define NCS_FIELDS_agg_kernels(F) \
  F(U64, until, 0) \
  F(U64, comm_ns, 0) \
  F(U64, exposed_ns, 0) \
  F(U64, kernels, 0)

/* 22 DEVCOMM (format 5.3): a device communicator created or destroyed (ncclDevCommCreate /
 * ncclDevCommDestroy, NCCL 2.28+, nccl_device/core.h), with what the job asked for in its
 * ncclDevCommRequirements (a create whose requirements the shim read: NCS_DEVCOMM_F_REQS). */
struct ncs_devcomm {
  uint32_t comm, op, thread, flags;
  int32_t rc;
  uint64_t handle, t_enter, t_exit;
  uint32_t lsa_multimem, barrier_count, lsa_barrier_count, rail_gin_barrier_count;
  uint32_t lsa_lla2a_block_count, lsa_lla2a_slot_count, gin_force_enable, gin_context_count;
  uint32_t gin_signal_count, gin_counter_count, resources, teams, multimem_teams;
  uint64_t resource_bytes;
};
#define NCS_FIELDS_devcomm(F) \
  F(U32, comm, 0)        /* the communicator (COMM's index), 0 when not known */ \
  F(U32, op, 0)          /* NCS_OP_DevCommCreate or NCS_OP_DevCommDestroy */ \
  F(I32, rc, 0)          /* what NCCL returned */ \
  F(U64, handle, 0)      /* the ncclDevComm_t pointer passed (create's out, destroy's in) */ \
  F(U64, t_enter, 0) \
  F(U64, t_exit, 0) \
  F(U32, thread, 0) \
  F(U32, flags, 0)       /* NCS_DEVCOMM_F_* */ \
  F(U32, lsa_multimem, 0) \
  F(U32, barrier_count, 0) \
  F(U32, lsa_barrier_count, 0) \
  F(U32, rail_gin_barrier_count, 0) \
  F(U32, lsa_lla2a_block_count, 0) \
  F(U32, lsa_lla2a_slot_count, 0) \
  F(U32, gin_force_enable, 0) \
  F(U32, gin_context_count, 0) \
  F(U32, gin_signal_count, 0) \
  F(U32, gin_counter_count, 0) \
  F(U32, resources, 0)   /* entries of resourceRequirementsList */ \
  F(U64, resource_bytes, 0) /* the sum of their bufferSize */ \
  F(U32, teams, 0)       /* entries of teamRequirementsList */ \
  F(U32, multimem_teams, 0) /* of which multimem */
#define NCS_DEVCOMM_F_REQS 1u      /* the requirements below were read (a successful create of a
                                      layout the shim knows) */
#define NCS_DEVCOMM_F_LIST_CUT 2u  /* a requirements list was longer than the shim walks (1024) */

#define NCS_RECORDS(R) \
  R(PROCESS, process_kv, PLAIN, PROCESS) \
  R(THREAD, thread, PLAIN, VISIT) \
  R(COMM, comm, PLAIN, VISIT) \
  R(COMM_END, comm_end, PLAIN, VISIT) \
  R(CALL, call, DELTA, VISIT) \
  R(CALLSITE, callsite, PLAIN, VISIT) \
  R(MODULE, module, PLAIN, VISIT) \
  R(DROP, drop, PLAIN, VISIT) \
  R(CLOCK, clock, PLAIN, VISIT) \
  R(GPU_TIME, gpu_time, DELTA, VISIT) \
  R(NCCL_LOG, log_line, PLAIN, VISIT) \
  R(TOPO_GPU, topo_gpu, PLAIN, RAW) \
  R(TOPO_LINK, topo_link, PLAIN, RAW) \
  R(PROFILE, profile, PLAIN, RAW) \
  R(KERNEL, kernel, PLAIN, RAW) \
  R(KERNEL_NAME, kernel_name, PLAIN, RAW) \
  R(KERNEL_STATUS, kernel_status, PLAIN, RAW) \
  R(INFLIGHT, inflight, PLAIN, VISIT) \
  R(PROFILE_ID, profile_id, PLAIN, RAW) \
  R(AGGREGATE, aggregate, PLAIN, RAW) \
  R(DEVCOMM, devcomm, PLAIN, RAW) \
  R(AGG_KERNELS, agg_kernels, PLAIN, RAW)
#define NCS_ELEMENTS(E) E(kv) E(frame)

#endif
