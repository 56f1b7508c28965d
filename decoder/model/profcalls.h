/* profcalls.h — the calls of a process whose NCCL no wrapper reached (NCCL linked statically into
 * the program or a library), rebuilt from NCCL's profiler events and kernel activity
 * (docs/PROFILER.md, "Static NCCL").
 *
 * Such a trace has no CALL or COMM record: the shim was started by NCCL's profiler plugin init
 * and its PROCESS record says calls_from=profiler. Its PROFILE / PROFILE_ID records (one per
 * collective NCCL enqueued) and KERNEL records are what is known.
 *
 * Contract: ncs_profcalls_visitor(p, down) returns a visitor that only looks at PROCESS and raw
 * records; put it after `down` in a mux (io/mux.h), so `down` gets every record of the file as
 * read. When the file's PROCESS record says calls_from=profiler it hands `down` what the events
 * say, as the shim would have written it:
 *  - one COMM per communicator seen in the events (by NCCL's commHash, which is the same on
 *    every rank of a communicator: comm_id = commHash; the ncclComm_t is not known: handle =
 *    commHash too, a non-zero stand-in), with its rank and size, before its first call;
 *  - one CALL per collective or Send/Recv event: op from the function name, count and datatype as NCCL
 *    handed them to the plugin (AllGather and Broadcast: bytes, ncclInt8, so bytes are exact
 *    and counts are in bytes), root, seq = the communicator's count of collectives so far (NCCL's own sequence number counts
 *    per function; every rank enqueues a communicator's collectives in one order), t_enter = t_exit = the
 *    event's time (the enqueue), thread NCS_PROFCALLS_THREAD; Send/Recv (recorded by a shim
 *    started by the plugin): root = peer, numbered apart from collectives as the shim does;
 *    redop, stream, call site, group and return code are not known (0);
 *  - its GPU time: the k-th NCCL kernel whose name runs function F (model/knames.h) is the k-th
 *    event of F in the file; Send/Recv: the k-th SendRecv kernel runs the k-th plan (consecutive
 *    events with one plan id, the record's seq), every task of it; the call waits for its kernel and goes on followed by a
 *    GPU_TIME(call) of that kernel's start and end. Calls go on in event order; a call still
 *    waiting when NCS_PROFCALLS_HOLD newer ones wait, or at ncs_profcalls_finish (no kernel
 *    came: kernel activity off), goes on without GPU time.
 * Not known: calls NCCL makes no event for (groups, communicator init/destroy, 1-rank
 * communicators); AlltoAll, Gather and Scatter come as their Send/Recv tasks.
 * ncs_profcalls_finish must follow the read (it hands on what still waits). Memory: the waiting
 * calls (about 150 bytes each) and kernels no event claimed yet (16 bytes each). A damaged
 * PROFILE record is counted (bad), never fatal. Not thread-safe; one per file. */
#ifndef NCS_PROFCALLS_H
#define NCS_PROFCALLS_H
#include <stdint.h>
#include "io/trace.h"

#define NCS_PROFCALLS_THREAD 1u
#define NCS_PROFCALLS_HOLD 65536u

struct ncs_profcalls_stats {
  int active;                 /* the file's calls come from profiler events */
  uint64_t calls, gpu_timed, comms, bad, unknown_funcs, kernels_unclaimed;
};

struct ncs_profcalls;
struct ncs_profcalls *ncs_profcalls_new(void); /* NULL when out of memory */
/* The looking visitor; down (a built mux's out, or any visitor) must outlive the read. */
struct ncs_visitor ncs_profcalls_visitor(struct ncs_profcalls *p, const struct ncs_visitor *down);
/* Hands on every call still waiting; returns the figures. */
struct ncs_profcalls_stats ncs_profcalls_finish(struct ncs_profcalls *p);
void ncs_profcalls_free(struct ncs_profcalls *p);
#endif
