/* ddp_job — a DDP-shaped training loop on the doubles, with its own ground truth.
 *
 * Usage (one process per rank, e.g. tests/jobs/launch.sh 4 ddp_job ...):
 *   ddp_job [--steps N] [--compute-us US] [--overlap] [--lat-us US] [--bw-gbps G]
 *           [--truth DIR] [--scale K] [--measure] [--linger-ms MS] [--ahead N]
 *           [--straggler-rank R --straggler-us US]
 * Per step: a compute phase (cudaDoubleCompute, COMPUTE-US in total), gradient buckets
 * all-reduced (three fp32 sizes and one bf16), then an all-gather, a broadcast (root = step
 * mod n), a reduce-scatter and a send/recv ring inside ncclGroupStart/End. With --overlap the
 * compute is split per bucket on a compute stream and each bucket's all-reduce runs on a
 * communication stream as soon as its piece of compute is done (as DDP overlaps backward and
 * gradient reduction); without it everything runs in order on one stream. --lat-us/--bw-gbps
 * set the NCCL double's link model (NCCLDOUBLE_LAT_US / NCCLDOUBLE_BW_GBPS). --scale
 * multiplies every message size. --measure times each communication call with CUDA events on
 * its stream (extra event records: off by default) and adds to the ground truth
 * "measured": {"comm_ns": sum over all steps of the calls' GPU intervals (they are sequential
 * on one stream, so the sum is their union), "wall_ns": host time from the start of step 0 to
 * the end of the last step}. By default the host waits for each step and checks it before
 * queueing the next. --ahead N (N >= 1, at most 64): the host queues up to N steps ahead of the
 * GPU, each in its own set of buffers (checked when the set is reused, or at the end), behind
 * a start line (job_util.h) that holds the GPU until the first N steps are queued and starts
 * every rank's GPU on one device time: the GPU's schedule is then the model's alone, whatever
 * the machine's load (docs/DOUBLES.md, "The device clock"). --straggler-rank R --straggler-us US:
 * rank R's first compute piece of each step lasts US longer (a slower GPU, a bigger shard), so
 * the others wait for it in the first all-reduce.
 * The truth always holds "device_step_ns": the mean step time on the device clock, from CUDA
 * events recorded on the communication stream at the end of each step (the end of step 0 to
 * the end of the last step, over steps - 1; 0 with one step); meaningful with --ahead, where
 * the GPU's schedule does not depend on the host (the proof of `report --what-if`,
 * tests/test_whatif.sh).
 *
 * Every result is checked; a wrong value exits 1. Ground truth (env DDP_TRUTH_DIR or --truth):
 * DIR/truth-rank<R>.json with, per NCCL operation this rank called (names as in
 * include/ncclscope/ops.h), calls, the sum of count arguments and of count × datatype size;
 * and the modelled compute and communication time per step (docs/DOUBLES.md). stdout is
 * deterministic (rank 0 prints a fixed summary); diagnostics go to stderr. */
#include <getopt.h>

#include "job_util.h"
#include "ncclscope/ops.h"
#include "include/nccl_double.h"

static struct { long calls; unsigned long long count, bytes; } g_truth[NCS_OP_LIMIT];
static double g_lat_us, g_bw_gbps;
static uint64_t g_comm_ns_step; /* modelled communication time of one step (this rank) */
static int g_counting_model = 1; /* only step 0 adds to g_comm_ns_step */

static void tally(enum ncs_op op, size_t count, ncclDataType_t dt) {
  g_truth[op].calls++;
  g_truth[op].count += count;
  g_truth[op].bytes += (unsigned long long)count * ncclscope_datatype_size(dt);
}
static void model(enum ndbl_rule rule, size_t count, ncclDataType_t dt, int n) {
  if (g_counting_model) g_comm_ns_step += ndbl_model_ns(rule, count, ncclscope_datatype_size(dt), n, g_lat_us, g_bw_gbps);
}

/* small exact values: sums over up to 64 ranks stay exact in fp32 and bf16 */
static float gval(int rank, size_t i, int step, int b) { return (float)((rank % 5) + (int)(i % 4) + ((step + b) % 3)); }

static uint16_t to_bf16(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); } /* exact for small ints */
static float from_bf16(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

int main(int argc, char **argv) {
  int steps = 5, overlap = 0, scale = 1, measure = 0, linger_ms = 0, ahead = 0, strag_rank = -1;
  double compute_us = 2000, strag_us = 0;
  const char *truth = getenv("DDP_TRUTH_DIR");
  static const struct option opts[] = {
    {"steps", 1, 0, 's'}, {"compute-us", 1, 0, 'c'}, {"overlap", 0, 0, 'o'}, {"lat-us", 1, 0, 'l'},
    {"bw-gbps", 1, 0, 'b'}, {"truth", 1, 0, 't'}, {"scale", 1, 0, 'k'}, {"measure", 0, 0, 'm'},
    {"linger-ms", 1, 0, 'g'}, {"ahead", 1, 0, 'a'}, {"straggler-rank", 1, 0, 'R'},
    {"straggler-us", 1, 0, 'U'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 's': steps = atoi(optarg); break;
    case 'c': compute_us = atof(optarg); break;
    case 'o': overlap = 1; break;
    case 'l': setenv("NCCLDOUBLE_LAT_US", optarg, 1); break;
    case 'b': setenv("NCCLDOUBLE_BW_GBPS", optarg, 1); break;
    case 't': truth = optarg; break;
    case 'k': scale = atoi(optarg); break;
    case 'm': measure = 1; break;
    case 'g': linger_ms = atoi(optarg); break;
    case 'a': ahead = atoi(optarg); break;
    case 'R': strag_rank = atoi(optarg); break;
    case 'U': strag_us = atof(optarg); break;
    default: fprintf(stderr, "usage: ddp_job [--steps N] [--compute-us US] [--overlap] [--lat-us US] [--bw-gbps G] [--truth DIR] [--scale K] [--measure] [--linger-ms MS] [--ahead N] [--straggler-rank R --straggler-us US]\n"); return 2;
    }
  }
  if (steps < 1 || scale < 1 || compute_us < 0 || ahead < 0 || ahead > 64 || strag_us < 0) { fprintf(stderr, "ddp_job: bad arguments\n"); return 2; }
  ndbl_model_env(&g_lat_us, &g_bw_gbps);
  int rank = job_env_int("RANK", 0), n = job_env_int("WORLD_SIZE", 1), ndev = 1;
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));

  ncclUniqueId id;
  if (rank == 0) tally(NCS_OP_GetUniqueId, 0, ncclInt8);
  job_unique_id(rank, n, "ddp", &id);
  ncclComm_t comm;
  tally(NCS_OP_CommInitRank, 0, ncclInt8);
  NCCHK(ncclCommInitRank(&comm, n, id, rank));

  cudaStream_t cs, ms; /* compute stream, communication stream (the same one without overlap) */
  CUCHK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  if (overlap) CUCHK(cudaStreamCreateWithFlags(&ms, cudaStreamNonBlocking));
  else ms = cs;

  enum { NB = 4, NT = NB + 4 /* timed communication calls per step */, DEPTH = 64 };
  const size_t bucket[NB] = {65536u * scale, 16384u * scale, 4096u * scale, 32768u * scale};
  const ncclDataType_t btype[NB] = {ncclFloat32, ncclFloat32, ncclFloat32, ncclBfloat16};
  const size_t ag = 4096u * scale, bc = 4096u * scale, rs = 4096u * scale, ring = 8192u * scale;
  /* the host runs up to `depth` steps ahead of the GPU, each step in its own set of buffers */
  const int depth = ahead == 0 ? 1 : steps < ahead ? steps : ahead;
  struct set {
    void *bbuf[NB];
    float *ag_s, *ag_r, *bc_b, *rs_s, *rs_r, *ring_s, *ring_r;
    cudaEvent_t done, tb[NT], te[NT];
  } sets[DEPTH];
  for (int k = 0; k < depth; k++) {
    struct set *z = &sets[k];
    for (int b = 0; b < NB; b++) CUCHK(cudaMalloc(&z->bbuf[b], bucket[b] * ncclscope_datatype_size(btype[b])));
    CUCHK(cudaMalloc((void **)&z->ag_s, ag * 4));
    CUCHK(cudaMalloc((void **)&z->ag_r, ag * 4 * n));
    CUCHK(cudaMalloc((void **)&z->bc_b, bc * 4));
    CUCHK(cudaMalloc((void **)&z->rs_s, rs * 4 * n));
    CUCHK(cudaMalloc((void **)&z->rs_r, rs * 4));
    CUCHK(cudaMalloc((void **)&z->ring_s, ring * 4));
    CUCHK(cudaMalloc((void **)&z->ring_r, ring * 4));
    CUCHK(cudaEventCreateWithFlags(&z->done, cudaEventDisableTiming));
    for (int t = 0; t < NT && measure; t++) { CUCHK(cudaEventCreate(&z->tb[t])); CUCHK(cudaEventCreate(&z->te[t])); }
  }
  cudaEvent_t piece_done[NB];
  for (int b = 0; b < NB; b++) CUCHK(cudaEventCreateWithFlags(&piece_done[b], cudaEventDisableTiming));
  const uint64_t piece_ns = (uint64_t)(compute_us * 1000.0) / NB;
  const uint64_t extra_ns = rank == strag_rank ? (uint64_t)(strag_us * 1000.0) : 0, compute_ns = piece_ns * NB + extra_ns;
  cudaEvent_t *step_end = calloc((size_t)steps, sizeof *step_end); /* device end of each step */
  JOBCHK(step_end, "out of memory");
  for (int k = 0; k < steps; k++) CUCHK(cudaEventCreate(&step_end[k]));
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  uint64_t comm_measured_ns = 0, wall_t0 = job_now_ns();
  /* the start line: the GPU holds until the first `depth` steps are queued and every rank got
   * there, then starts on one device time on all ranks (job_util.h) */
  struct job_start_line line;
  if (ahead) job_start_line_arm(&line, cs, rank, n, "ddp-line");
  int checked = 0;

  for (int step = 0; step < steps + depth; step++) {
    if (ahead && step == depth) job_start_line_go(&line);
    int done_step = step - depth; /* the step whose buffers this one reuses: check it first */
    if (done_step >= 0) {
      struct set *z = &sets[done_step % depth];
      CUCHK(cudaEventSynchronize(z->done));
      for (int k = 0; k < NT && measure; k++) {
        float t_ms = 0;
        CUCHK(cudaEventElapsedTime(&t_ms, z->tb[k], z->te[k]));
        comm_measured_ns += (uint64_t)((double)t_ms * 1e6);
      }
      for (int b = 0; b < NB; b++)
        for (size_t i = 0; i < bucket[b]; i++) {
          float want = 0;
          for (int r = 0; r < n; r++) want += gval(r, i, done_step, b);
          float got = btype[b] == ncclBfloat16 ? from_bf16(((uint16_t *)z->bbuf[b])[i]) : ((float *)z->bbuf[b])[i];
          JOBCHK(got == want, "rank %d step %d bucket %d [%zu]: got %g want %g", rank, done_step, b, i, got, want);
        }
      for (int r = 0; r < n; r++)
        for (size_t i = 0; i < ag; i++)
          JOBCHK(z->ag_r[(size_t)r * ag + i] == (float)(r * 100 + (int)(i % 97)), "allgather [%d][%zu]", r, i);
      for (size_t i = 0; i < bc; i++) JOBCHK(z->bc_b[i] == (float)(done_step + (int)(i % 13)), "broadcast [%zu]", i);
      for (size_t i = 0; i < rs; i++) {
        float want = 0;
        for (int r = 0; r < n; r++) want += (float)((r % 7) + (int)(((size_t)rank * rs + i) % 5));
        JOBCHK(z->rs_r[i] == want, "reducescatter [%zu]: got %g want %g", i, z->rs_r[i], want);
      }
      for (size_t i = 0; i < ring; i++) JOBCHK(z->ring_r[i] == (float)(prev * 3 + (int)(i % 11)), "ring [%zu]", i);
      if (rank == 0) printf("step %d: %d ranks, results correct\n", done_step, n);
      checked++;
    }
    if (step >= steps) continue;
    struct set *z = &sets[step % depth];
#define TIMED(k, stmt) do { if (measure) CUCHK(cudaEventRecord(z->tb[k], ms)); stmt; \
                            if (measure) CUCHK(cudaEventRecord(z->te[k], ms)); } while (0)
    /* gradients, as the backward pass would leave them */
    for (int b = 0; b < NB; b++)
      for (size_t i = 0; i < bucket[b]; i++) {
        float v = gval(rank, i, step, b);
        if (btype[b] == ncclBfloat16) ((uint16_t *)z->bbuf[b])[i] = to_bf16(v);
        else ((float *)z->bbuf[b])[i] = v;
      }
    for (size_t i = 0; i < ag; i++) z->ag_s[i] = (float)(rank * 100 + (int)(i % 97));
    int root = step % n;
    for (size_t i = 0; i < bc; i++) z->bc_b[i] = rank == root ? (float)(step + (int)(i % 13)) : -1.0f;
    for (size_t i = 0; i < rs * n; i++) z->rs_s[i] = (float)((rank % 7) + (int)(i % 5));
    for (size_t i = 0; i < ring; i++) z->ring_s[i] = (float)(rank * 3 + (int)(i % 11));

    /* backward + gradient all-reduce per bucket */
    for (int b = 0; b < NB; b++) {
      CUCHK(cudaDoubleCompute(cs, piece_ns + (b == 0 ? extra_ns : 0)));
      if (overlap) {
        CUCHK(cudaEventRecord(piece_done[b], cs));
        CUCHK(cudaStreamWaitEvent(ms, piece_done[b], 0));
      }
      tally(NCS_OP_AllReduce, bucket[b], btype[b]);
      model(NDBL_RULE_ALLREDUCE, bucket[b], btype[b], n);
      TIMED(b, NCCHK(ncclAllReduce(z->bbuf[b], z->bbuf[b], bucket[b], btype[b], ncclSum, comm, ms)));
    }
    tally(NCS_OP_AllGather, ag, ncclFloat32);
    model(NDBL_RULE_NTIMES, ag, ncclFloat32, n);
    TIMED(NB, NCCHK(ncclAllGather(z->ag_s, z->ag_r, ag, ncclFloat32, comm, ms)));
    tally(NCS_OP_Broadcast, bc, ncclFloat32);
    model(NDBL_RULE_ONE, bc, ncclFloat32, n);
    TIMED(NB + 1, NCCHK(ncclBroadcast(z->bc_b, z->bc_b, bc, ncclFloat32, root, comm, ms)));
    tally(NCS_OP_ReduceScatter, rs, ncclFloat32);
    model(NDBL_RULE_NTIMES, rs, ncclFloat32, n);
    TIMED(NB + 2, NCCHK(ncclReduceScatter(z->rs_s, z->rs_r, rs, ncclFloat32, ncclSum, comm, ms)));
    tally(NCS_OP_GroupStart, 0, ncclInt8);
    if (measure) CUCHK(cudaEventRecord(z->tb[NB + 3], ms));
    NCCHK(ncclGroupStart());
    tally(NCS_OP_Send, ring, ncclFloat32);
    NCCHK(ncclSend(z->ring_s, ring, ncclFloat32, next, comm, ms));
    tally(NCS_OP_Recv, ring, ncclFloat32);
    NCCHK(ncclRecv(z->ring_r, ring, ncclFloat32, prev, comm, ms));
    tally(NCS_OP_GroupEnd, 0, ncclInt8);
    model(NDBL_RULE_ONE, ring, ncclFloat32, n); /* a p2p group: max(sent, received) bytes */
    NCCHK(ncclGroupEnd());
    if (measure) CUCHK(cudaEventRecord(z->te[NB + 3], ms));
#undef TIMED
    /* the step is done when both streams are (the compute stream's last piece precedes the
     * last all-reduce on the communication stream) */
    CUCHK(cudaEventRecord(z->done, ms));
    CUCHK(cudaEventRecord(step_end[step], ms));
    g_counting_model = 0;
  }
  CUCHK(cudaStreamSynchronize(cs));
  JOBCHK(checked == steps, "checked %d of %d steps", checked, steps);
  float dev_ms = 0;
  /* step_end is recorded on the communication stream, which --overlap makes another stream than
   * cs: wait for it (CUDA answers cudaErrorNotReady for an event not yet complete) */
  if (steps > 1) CUCHK(cudaEventSynchronize(step_end[steps - 1]));
  if (steps > 1) CUCHK(cudaEventElapsedTime(&dev_ms, step_end[0], step_end[steps - 1]));
  const double device_step_ns = steps > 1 ? (double)dev_ms * 1e6 / (steps - 1) : 0;
  for (int k = 0; k < steps; k++) CUCHK(cudaEventDestroy(step_end[k]));
  free(step_end);

  uint64_t wall_ns = job_now_ns() - wall_t0;
  /* --linger-ms: the host idles before tearing down (a job's evaluation or checkpoint), so a
   * tool that writes periodically (the NCCL Inspector's dump thread) writes its last records */
  if (linger_ms > 0) usleep((useconds_t)linger_ms * 1000);
  tally(NCS_OP_CommDestroy, 0, ncclInt8);
  NCCHK(ncclCommDestroy(comm));
  if (rank == 0) printf("ddp_job: %d steps on %d ranks%s, all results correct\n", steps, n, overlap ? " (overlapped)" : "");

  if (truth && *truth) {
    char path[4096];
    snprintf(path, sizeof path, "%s/truth-rank%d.json", truth, rank);
    FILE *f = fopen(path, "w");
    JOBCHK(f, "cannot write %s", path);
    fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"steps\": %d, \"overlap\": %s, \"lat_us\": %g, \"bw_gbps\": %g,\n",
            rank, n, steps, overlap ? "true" : "false", g_lat_us, g_bw_gbps);
    fprintf(f, " \"compute_ns_per_step\": %llu, \"comm_ns_per_step\": %llu, \"device_step_ns\": %.0f,\n",
            (unsigned long long)compute_ns, (unsigned long long)g_comm_ns_step, device_step_ns);
    if (measure)
      fprintf(f, " \"measured\": {\"comm_ns\": %llu, \"wall_ns\": %llu},\n",
              (unsigned long long)comm_measured_ns, (unsigned long long)wall_ns);
    fprintf(f, " \"ops\": {");
    int first = 1;
    for (int op = 1; op < NCS_OP_LIMIT; op++) {
      if (!g_truth[op].calls) continue;
      fprintf(f, "%s\n  \"%s\": {\"calls\": %ld, \"count\": %llu, \"bytes\": %llu}", first ? "" : ",",
              ncs_op_name((unsigned)op), g_truth[op].calls, g_truth[op].count, g_truth[op].bytes);
      first = 0;
    }
    fprintf(f, "\n }\n}\n");
    JOBCHK(fclose(f) == 0, "cannot write %s", path);
  }
  for (int b = 0; b < NB; b++) CUCHK(cudaEventDestroy(piece_done[b]));
  for (int k = 0; k < depth; k++) {
    struct set *z = &sets[k];
    for (int b = 0; b < NB; b++) CUCHK(cudaFree(z->bbuf[b]));
    float *bufs[] = {z->ag_s, z->ag_r, z->bc_b, z->rs_s, z->rs_r, z->ring_s, z->ring_r};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) CUCHK(cudaFree(bufs[i]));
    CUCHK(cudaEventDestroy(z->done));
    for (int t = 0; t < NT && measure; t++) { CUCHK(cudaEventDestroy(z->tb[t])); CUCHK(cudaEventDestroy(z->te[t])); }
  }
  CUCHK(cudaStreamDestroy(cs));
  if (overlap) CUCHK(cudaStreamDestroy(ms));
  return 0;
}
