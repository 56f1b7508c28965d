/* coll_check — checks the results of every NCCL operation of the double on N ranks.
 *
 * Usage: tests/jobs/launch.sh N coll_check   (or alone, as 1 rank)
 * Covers: AllReduce for all 12 datatypes × sum/prod/max/min/avg, PreMulSum (host and device
 * scalar), messages larger than the staging slots and the point-to-point rings, in-place
 * operations, Reduce, Broadcast, Bcast, AllGather, ReduceScatter, AlltoAll, Gather, Scatter,
 * Send/Recv rings in a group, a group spanning two streams, zero-count operations, CommSplit.
 * Each rank checks its own results; the verdicts are combined with an all-reduce (min) and
 * rank 0 prints one "PASS: name" or "FAIL: name" line per check. Exit 1 if any failed. */
#include "job_util.h"

static int g_rank, g_n, g_failed;
static ncclComm_t g_comm;
static cudaStream_t g_s, g_s2;
static int32_t *g_flag;

static void report(const char *name, int ok) {
  *g_flag = ok;
  NCCHK(ncclAllReduce(g_flag, g_flag, 1, ncclInt32, ncclMin, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  if (!*g_flag) g_failed = 1;
  if (g_rank == 0) printf("%s: coll_check %d ranks: %s\n", *g_flag ? "PASS" : "FAIL", g_n, name);
  if (!ok) fprintf(stderr, "rank %d: %s failed\n", g_rank, name);
  fflush(stdout);
}

/* ---- value encoding for small non-negative integers, decoding of everything ---- */
static int ilog2(unsigned k) { int e = 0; while (k >> (e + 1)) e++; return e; }
static unsigned enc_mini(unsigned k, int mbits, int bias) {
  if (!k) return 0;
  int e = ilog2(k);
  return ((unsigned)(e + bias) << mbits) | ((k << mbits >> e) & ((1u << mbits) - 1));
}
static double dec_mini(unsigned v, int mbits, int ebits, int bias) {
  unsigned e = (v >> mbits) & ((1u << ebits) - 1), m = v & ((1u << mbits) - 1);
  double r = e ? (1.0 + m / (double)(1u << mbits)) : m / (double)(1u << mbits);
  int ex = e ? (int)e - bias : 1 - bias;
  while (ex > 0) { r *= 2; ex--; }
  while (ex < 0) { r /= 2; ex++; }
  return (v >> (mbits + ebits)) & 1 ? -r : r;
}
static void put(void *p, size_t i, int dt, unsigned k) {
  switch (dt) {
  case ncclInt8: ((int8_t *)p)[i] = (int8_t)k; break;
  case ncclUint8: ((uint8_t *)p)[i] = (uint8_t)k; break;
  case ncclInt32: ((int32_t *)p)[i] = (int32_t)k; break;
  case ncclUint32: ((uint32_t *)p)[i] = k; break;
  case ncclInt64: ((int64_t *)p)[i] = k; break;
  case ncclUint64: ((uint64_t *)p)[i] = k; break;
  case ncclFloat16: ((uint16_t *)p)[i] = (uint16_t)enc_mini(k, 10, 15); break;
  case ncclFloat32: ((float *)p)[i] = (float)k; break;
  case ncclFloat64: ((double *)p)[i] = k; break;
  case ncclBfloat16: { float f = (float)k; uint32_t u; memcpy(&u, &f, 4); ((uint16_t *)p)[i] = (uint16_t)(u >> 16); break; }
  case ncclFloat8e4m3: ((uint8_t *)p)[i] = (uint8_t)enc_mini(k, 3, 7); break;
  case ncclFloat8e5m2: ((uint8_t *)p)[i] = (uint8_t)enc_mini(k, 2, 15); break;
  }
}
static double get(const void *p, size_t i, int dt) {
  switch (dt) {
  case ncclInt8: return ((const int8_t *)p)[i];
  case ncclUint8: return ((const uint8_t *)p)[i];
  case ncclInt32: return ((const int32_t *)p)[i];
  case ncclUint32: return ((const uint32_t *)p)[i];
  case ncclInt64: return (double)((const int64_t *)p)[i];
  case ncclUint64: return (double)((const uint64_t *)p)[i];
  case ncclFloat16: return dec_mini(((const uint16_t *)p)[i], 10, 5, 15);
  case ncclFloat32: return ((const float *)p)[i];
  case ncclFloat64: return ((const double *)p)[i];
  case ncclBfloat16: { uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16; float f; memcpy(&f, &u, 4); return f; }
  case ncclFloat8e4m3: return dec_mini(((const uint8_t *)p)[i], 3, 4, 7);
  default: return dec_mini(((const uint8_t *)p)[i], 2, 5, 15);
  }
}
static int is_int(int dt) { return dt <= ncclUint64; }
/* the value a C variable of integer type dt holds after assigning v */
static double wrap(int dt, long long v) {
  switch (dt) {
  case ncclInt8: return (int8_t)v;
  case ncclUint8: return (uint8_t)v;
  case ncclInt32: return (int32_t)v;
  case ncclUint32: return (uint32_t)v;
  default: return (double)v;
  }
}
static double tol(int dt) {
  switch (dt) {
  case ncclFloat16: return 2e-3;
  case ncclBfloat16: return 1e-2;
  case ncclFloat8e4m3: case ncclFloat8e5m2: return 0.15;
  case ncclFloat32: return 1e-5;
  default: return 1e-12;
  }
}
static int close_to(int dt, double got, double want) {
  if (is_int(dt)) return got == want;
  double d = got - want, a = want < 0 ? -want : want;
  if (d < 0) d = -d;
  return d <= tol(dt) * (a > 1 ? a : 1);
}

static unsigned val(int dt, int op, int r, size_t i) {
  if (op == ncclProd) return 1 + (unsigned)((r + i) % 2);
  if (dt == ncclFloat8e4m3 || dt == ncclFloat8e5m2) return (unsigned)((r + i) % 2);
  return (unsigned)(r % 4) + (unsigned)(i % 3);
}

static double expect(int dt, int op, size_t i, int n, double scale) {
  long long iacc = 0;
  double facc = 0;
  for (int r = 0; r < n; r++) {
    long long v = val(dt, op, r, i);
    if (op == 100) v = (long long)(v * scale);
    if (r == 0) { iacc = v; facc = (double)v; continue; }
    switch (op) {
    case ncclProd: iacc = (long long)wrap(dt, iacc * v); facc *= (double)v; break;
    case ncclMax: if (v > iacc) iacc = v; if (v > facc) facc = (double)v; break;
    case ncclMin: if (v < iacc) iacc = v; if (v < facc) facc = (double)v; break;
    default: iacc = (long long)wrap(dt, iacc + v); facc += (double)v; break;
    }
  }
  if (op == ncclAvg) { iacc = (long long)wrap(dt, iacc) / n; facc /= n; }
  return is_int(dt) ? wrap(dt, iacc) : facc;
}

static const char *dtname(int dt) {
  static const char *names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "fp16", "fp32",
                                "fp64", "bf16", "fp8e4m3", "fp8e5m2"};
  return names[dt];
}

static void check_allreduce_types(void) {
  const size_t count = 1031;
  void *s, *r;
  CUCHK(cudaMalloc(&s, count * 8));
  CUCHK(cudaMalloc(&r, count * 8));
  for (int dt = 0; dt < ncclNumTypes; dt++) {
    for (int op = 0; op < ncclNumOps; op++) {
      for (size_t i = 0; i < count; i++) put(s, i, dt, val(dt, op, g_rank, i));
      NCCHK(ncclAllReduce(s, r, count, (ncclDataType_t)dt, (ncclRedOp_t)op, g_comm, g_s));
      CUCHK(cudaStreamSynchronize(g_s));
      int ok = 1;
      for (size_t i = 0; i < count && ok; i++) {
        ok = close_to(dt, get(r, i, dt), expect(dt, op, i, g_n, 1));
        if (!ok) fprintf(stderr, "allreduce %s op %d [%zu]: got %g want %g\n", dtname(dt), op, i,
                         get(r, i, dt), expect(dt, op, i, g_n, 1));
      }
      char name[96];
      static const char *opn[] = {"sum", "prod", "max", "min", "avg"};
      snprintf(name, sizeof name, "allreduce %s %s", dtname(dt), opn[op]);
      report(name, ok);
    }
  }
  /* PreMulSum: host-immediate scalar 3 on fp32/int32/fp16, device scalar 2 on fp32 */
  static const int pdt[] = {ncclFloat32, ncclInt32, ncclFloat16};
  for (int k = 0; k < 3; k++) {
    int dt = pdt[k];
    unsigned char scalar[8];
    put(scalar, 0, dt, 3);
    ncclRedOp_t op;
    NCCHK(ncclRedOpCreatePreMulSum(&op, scalar, (ncclDataType_t)dt, ncclScalarHostImmediate, g_comm));
    memset(scalar, 0, sizeof scalar); /* host-immediate: the value was taken at creation */
    for (size_t i = 0; i < count; i++) put(s, i, dt, val(dt, ncclSum, g_rank, i));
    NCCHK(ncclAllReduce(s, r, count, (ncclDataType_t)dt, op, g_comm, g_s));
    CUCHK(cudaStreamSynchronize(g_s));
    int ok = 1;
    for (size_t i = 0; i < count && ok; i++) ok = close_to(dt, get(r, i, dt), expect(dt, 100, i, g_n, 3));
    NCCHK(ncclRedOpDestroy(op, g_comm));
    char name[96];
    snprintf(name, sizeof name, "allreduce %s premulsum host scalar", dtname(dt));
    report(name, ok);
  }
  float *dscalar;
  CUCHK(cudaMalloc((void **)&dscalar, sizeof *dscalar));
  *dscalar = 5.0f;
  ncclRedOp_t op;
  NCCHK(ncclRedOpCreatePreMulSum(&op, dscalar, ncclFloat32, ncclScalarDevice, g_comm));
  *dscalar = 2.0f; /* device residence: read when the operation runs */
  for (size_t i = 0; i < count; i++) put(s, i, ncclFloat32, val(ncclFloat32, ncclSum, g_rank, i));
  NCCHK(ncclAllReduce(s, r, count, ncclFloat32, op, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  int ok = 1;
  for (size_t i = 0; i < count && ok; i++) ok = close_to(ncclFloat32, get(r, i, ncclFloat32), expect(ncclFloat32, 100, i, g_n, 2));
  NCCHK(ncclRedOpDestroy(op, g_comm));
  report("allreduce fp32 premulsum device scalar", ok);
  CUCHK(cudaFree(dscalar));
  CUCHK(cudaFree(s));
  CUCHK(cudaFree(r));
}

static float fv(int r, size_t i) { return (float)(r * 1000 + (int)(i % 1000)); }

static void check_large_and_rooted(void) {
  const size_t big = 700001; /* 2.8 MB of fp32: several staging chunks */
  const int n = g_n, me = g_rank;
  float *a, *b;
  CUCHK(cudaMalloc((void **)&a, big * 4 * (size_t)n));
  CUCHK(cudaMalloc((void **)&b, big * 4 * (size_t)n));
  int ok = 1;

  for (size_t i = 0; i < big; i++) a[i] = (float)(me + (int)(i % 10));
  NCCHK(ncclAllReduce(a, a, big, ncclFloat32, ncclSum, g_comm, g_s)); /* in place */
  CUCHK(cudaStreamSynchronize(g_s));
  for (size_t i = 0; i < big && ok; i++) ok = a[i] == (float)(n * (n - 1) / 2 + n * (int)(i % 10));
  report("allreduce fp32 large in-place (chunked)", ok);

  int root = n - 1;
  for (size_t i = 0; i < big; i++) { a[i] = (float)(me + 1); b[i] = -1; }
  NCCHK(ncclReduce(a, b, big, ncclFloat32, ncclMax, root, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (size_t i = 0; i < big && ok; i++) ok = b[i] == (me == root ? (float)n : -1.0f);
  report("reduce fp32 max large (root n-1, others untouched)", ok);

  root = 1 % n;
  for (size_t i = 0; i < big; i++) { a[i] = me == root ? fv(me, i) : 0; b[i] = -1; }
  NCCHK(ncclBroadcast(a, b, big, ncclFloat32, root, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (size_t i = 0; i < big && ok; i++) ok = b[i] == fv(root, i);
  report("broadcast fp32 large", ok);

  uint8_t *u = (uint8_t *)a;
  for (size_t i = 0; i < 5000; i++) u[i] = me == 0 ? (uint8_t)(i * 7) : 0;
  NCCHK(ncclBcast(u, 5000, ncclUint8, 0, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (size_t i = 0; i < 5000 && ok; i++) ok = u[i] == (uint8_t)(i * 7);
  report("bcast uint8 in place", ok);

  const size_t agc = 300001;
  for (size_t i = 0; i < agc; i++) a[i] = fv(me, i);
  NCCHK(ncclAllGather(a, b, agc, ncclFloat32, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (int r = 0; r < n && ok; r++)
    for (size_t i = 0; i < agc && ok; i++) ok = b[(size_t)r * agc + i] == fv(r, i);
  report("allgather fp32 large", ok);

  int64_t *l = (int64_t *)a, *lr = (int64_t *)b;
  for (size_t i = 0; i < 777; i++) l[i] = (int64_t)me << 40 | (int64_t)i;
  NCCHK(ncclAllGather(l, lr, 777, ncclInt64, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (int r = 0; r < n && ok; r++)
    for (size_t i = 0; i < 777 && ok; i++) ok = lr[(size_t)r * 777 + i] == ((int64_t)r << 40 | (int64_t)i);
  report("allgather int64", ok);

  const size_t rsc = 200003;
  for (size_t i = 0; i < rsc * n; i++) a[i] = (float)((me + 1) * (int)(i % 7));
  NCCHK(ncclReduceScatter(a, b, rsc, ncclFloat32, ncclSum, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (size_t i = 0; i < rsc && ok; i++) ok = b[i] == (float)(n * (n + 1) / 2 * (int)(((size_t)me * rsc + i) % 7));
  report("reducescatter fp32 large", ok);

  uint16_t *h = (uint16_t *)a, *hr = (uint16_t *)b;
  for (size_t i = 0; i < 999 * (size_t)n; i++) put(h, i, ncclBfloat16, (unsigned)(me + (int)(i % 3)));
  NCCHK(ncclReduceScatter(h, hr, 999, ncclBfloat16, ncclSum, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (size_t i = 0; i < 999 && ok; i++)
    ok = get(hr, i, ncclBfloat16) == (double)(n * (n - 1) / 2 + n * (int)(((size_t)me * 999 + i) % 3));
  report("reducescatter bf16", ok);

  const size_t a2a = 150001;
  for (int j = 0; j < n; j++)
    for (size_t i = 0; i < a2a; i++) a[(size_t)j * a2a + i] = (float)(me * 100 + j) + (float)(i % 5) * 1000;
  NCCHK(ncclAlltoAll(a, b, a2a, ncclFloat32, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (int k = 0; k < n && ok; k++)
    for (size_t i = 0; i < a2a && ok; i++) ok = b[(size_t)k * a2a + i] == (float)(k * 100 + me) + (float)(i % 5) * 1000;
  report("alltoall fp32 large", ok);

  const size_t gc = 100003;
  for (size_t i = 0; i < gc; i++) a[i] = fv(me, i);
  for (size_t i = 0; i < gc * n; i++) b[i] = -1;
  NCCHK(ncclGather(a, b, gc, ncclFloat32, 0, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (int r = 0; r < n && ok; r++)
    for (size_t i = 0; i < gc && ok; i++) ok = b[(size_t)r * gc + i] == (me == 0 ? fv(r, i) : -1.0f);
  report("gather fp32 (root 0)", ok);

  root = n - 1;
  for (size_t i = 0; i < gc * n; i++) a[i] = me == root ? (float)(i / gc * 10 + i % 9) : -5;
  NCCHK(ncclScatter(a, b, gc, ncclFloat32, root, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (size_t i = 0; i < gc && ok; i++) ok = b[i] == (float)(me * 10 + (int)(((size_t)me * gc + i) % 9));
  report("scatter fp32 (root n-1)", ok);

  /* zero counts are no-ops and must not disturb what follows */
  NCCHK(ncclAllReduce(a, b, 0, ncclFloat32, ncclSum, g_comm, g_s));
  NCCHK(ncclAllGather(a, b, 0, ncclFloat32, g_comm, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  report("zero-count operations", 1);
  CUCHK(cudaFree(a));
  CUCHK(cudaFree(b));
}

static void check_p2p_and_groups(void) {
  const int n = g_n, me = g_rank, next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t big = 400007; /* 1.6 MB: far beyond one ring's capacity */
  float *s1, *s2, *r1, *r2;
  CUCHK(cudaMalloc((void **)&s1, big * 4));
  CUCHK(cudaMalloc((void **)&s2, big * 4));
  CUCHK(cudaMalloc((void **)&r1, big * 4));
  CUCHK(cudaMalloc((void **)&r2, big * 4));
  for (size_t i = 0; i < big; i++) { s1[i] = fv(me, i); s2[i] = -fv(me, i); r1[i] = r2[i] = 0; }
  /* both directions around the ring at once: deadlocks unless the group progresses together */
  NCCHK(ncclGroupStart());
  NCCHK(ncclSend(s1, big, ncclFloat32, next, g_comm, g_s));
  NCCHK(ncclSend(s2, big, ncclFloat32, prev, g_comm, g_s));
  NCCHK(ncclRecv(r1, big, ncclFloat32, prev, g_comm, g_s));
  NCCHK(ncclRecv(r2, big, ncclFloat32, next, g_comm, g_s));
  NCCHK(ncclGroupEnd());
  CUCHK(cudaStreamSynchronize(g_s));
  int ok = 1;
  for (size_t i = 0; i < big && ok; i++) ok = r1[i] == fv(prev, i) && r2[i] == -fv(next, i);
  report("send/recv both ways around the ring, grouped, large", ok);

  /* nested groups; collectives on two streams in one group; an op with a NULL stream */
  for (size_t i = 0; i < 1000; i++) { s1[i] = 1; s2[i] = (float)me; }
  NCCHK(ncclGroupStart());
  NCCHK(ncclGroupStart());
  NCCHK(ncclAllReduce(s1, r1, 1000, ncclFloat32, ncclSum, g_comm, g_s));
  NCCHK(ncclGroupEnd());
  NCCHK(ncclAllReduce(s2, r2, 1000, ncclFloat32, ncclMax, g_comm, g_s2));
  NCCHK(ncclGroupEnd());
  CUCHK(cudaStreamSynchronize(g_s));
  CUCHK(cudaStreamSynchronize(g_s2));
  ok = 1;
  for (size_t i = 0; i < 1000 && ok; i++) ok = r1[i] == (float)n && r2[i] == (float)(n - 1);
  report("nested group with collectives on two streams", ok);

  for (size_t i = 0; i < 100; i++) s1[i] = 2;
  NCCHK(ncclAllReduce(s1, r1, 100, ncclFloat32, ncclProd, g_comm, NULL));
  CUCHK(cudaDeviceSynchronize());
  ok = 1;
  float want = 1;
  for (int r = 0; r < n; r++) want *= 2;
  for (size_t i = 0; i < 100 && ok; i++) ok = r1[i] == want;
  report("allreduce on the legacy NULL stream", ok);

  /* self send/recv */
  NCCHK(ncclGroupStart());
  NCCHK(ncclSend(s2, 1000, ncclFloat32, me, g_comm, g_s));
  NCCHK(ncclRecv(r2, 1000, ncclFloat32, me, g_comm, g_s));
  NCCHK(ncclGroupEnd());
  CUCHK(cudaStreamSynchronize(g_s));
  ok = 1;
  for (size_t i = 0; i < 1000 && ok; i++) ok = r2[i] == (float)me;
  report("send/recv to self in a group", ok);
  CUCHK(cudaFree(s1));
  CUCHK(cudaFree(s2));
  CUCHK(cudaFree(r1));
  CUCHK(cudaFree(r2));
}

static void check_split(void) {
  ncclComm_t sub;
  int color = g_rank % 2;
  NCCHK(ncclCommSplit(g_comm, color, -g_rank, &sub, NULL));
  int sn = 0, sr = 0;
  NCCHK(ncclCommCount(sub, &sn));
  NCCHK(ncclCommUserRank(sub, &sr));
  int want_n = 0, want_r = 0;
  for (int r = 0; r < g_n; r++)
    if (r % 2 == color) { want_n++; if (r > g_rank) want_r++; } /* key -rank: reversed order */
  int32_t *x;
  CUCHK(cudaMalloc((void **)&x, 64 * 4));
  for (int i = 0; i < 64; i++) x[i] = g_rank;
  NCCHK(ncclAllReduce(x, x, 64, ncclInt32, ncclSum, sub, g_s));
  CUCHK(cudaStreamSynchronize(g_s));
  int32_t sum = 0;
  for (int r = color; r < g_n; r += 2) sum += r;
  int ok = sn == want_n && sr == want_r;
  for (int i = 0; i < 64 && ok; i++) ok = x[i] == sum;
  NCCHK(ncclCommDestroy(sub));
  report("commsplit by parity, reversed keys, allreduce in the sub-communicator", ok);

  NCCHK(ncclCommSplit(g_comm, g_rank == 0 ? -1 /* NCCL_SPLIT_NOCOLOR */ : 7, 0, &sub, NULL));
  ok = g_rank == 0 ? sub == NULL : sub != NULL;
  if (sub) {
    NCCHK(ncclCommCount(sub, &sn));
    ok = ok && sn == g_n - 1;
    NCCHK(ncclCommDestroy(sub));
  }
  report("commsplit with NCCL_SPLIT_NOCOLOR", ok);
  CUCHK(cudaFree(x));
}

int main(void) {
  g_rank = job_env_int("RANK", 0);
  g_n = job_env_int("WORLD_SIZE", 1);
  int ndev = 1;
  CUCHK(cudaGetDeviceCount(&ndev));
  CUCHK(cudaSetDevice(job_env_int("LOCAL_RANK", 0) % ndev));
  ncclUniqueId id;
  job_unique_id(g_rank, g_n, "coll", &id);
  NCCHK(ncclCommInitRank(&g_comm, g_n, id, g_rank));
  CUCHK(cudaStreamCreate(&g_s));
  CUCHK(cudaStreamCreateWithFlags(&g_s2, cudaStreamNonBlocking));
  CUCHK(cudaMalloc((void **)&g_flag, 4));
  check_allreduce_types();
  check_large_and_rooted();
  check_p2p_and_groups();
  check_split();
  NCCHK(ncclCommDestroy(g_comm));
  return g_failed;
}
