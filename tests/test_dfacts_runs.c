/* test_dfacts_runs.c — doctor_facts (decoder/analysis/doctor_facts.c) fed a run of calls at once
 * gives the same facts as fed one call at a time: the host window, the call count and the host
 * communication time (the union of communication calls' host intervals), whose closed unions a
 * run adds as one integer sum below 2^53 ns and one double at a time past it, as a call at a
 * time does. */
#include <stdlib.h>
#include <string.h>

#include "analysis/doctor_facts.h"
#include "check.h"
#include "ncclscope/ops.h"

#define NCALLS 40

/* The facts of x[0..n) fed in runs of `run` calls (1: one call at a time). */
static struct ncs_dfacts *feed(const struct ncs_call *x, size_t n, size_t run) {
  struct ncs_dfacts *f = ncs_dfacts_new("t");
  struct ncs_mux m;
  memset(&m, 0, sizeof m);
  if (!f) return NULL;
  ncs_dfacts_attach(f, &m);
  for (size_t i = 0; i < n; i += run) m.v[0].calls(m.v[0].ctx, x + i, n - i < run ? n - i : run);
  return f;
}

static int same_facts(const struct ncs_dfacts *a, const struct ncs_dfacts *b) {
  return a->ncalls == b->ncalls && a->t_first == b->t_first && a->t_last == b->t_last &&
         a->host_cur_s == b->host_cur_s && a->host_cur_e == b->host_cur_e &&
         memcmp(&a->host_comm_ns, &b->host_comm_ns, sizeof a->host_comm_ns) == 0;
}

static struct ncs_call call(uint32_t op, uint64_t s, uint64_t e) {
  return (struct ncs_call){.op = op, .thread = 1, .datatype = 7, .root = -1, .t_enter = s, .t_exit = e};
}

int main(void) {
  const uint64_t big = 1ull << 53;
  struct ncs_call x[NCALLS];
  /* a union of 2^53 ns, then ten of 1 ns: as doubles added one at a time each 1 is lost */
  x[0] = call(NCS_OP_AllReduce, 100, 100 + big);
  for (int k = 1; k <= 11; k++) x[k] = call(NCS_OP_AllReduce, big + 200 + 10 * (uint64_t)k, big + 201 + 10 * (uint64_t)k);
  struct ncs_dfacts *one = feed(x, 12, 1), *run = feed(x, 12, 12);
  CHECK(one && run && one->host_comm_ns == (double)big, "dfacts: call by call, unions past 2^53 ns add as doubles (1 ns lost each)");
  CHECK(one && run && same_facts(one, run), "dfacts: a run past 2^53 ns gives the same facts as call by call");
  ncs_dfacts_free(one);
  ncs_dfacts_free(run);

  /* below 2^53: overlapping, nested, out-of-order, empty and non-communication calls */
  static const struct { uint32_t op; uint64_t s, e; } shape[] = {
    {NCS_OP_AllReduce, 1000, 1500}, {NCS_OP_AllReduce, 1200, 1400}, {NCS_OP_Send, 1450, 1700},
    {NCS_OP_CommInitRank, 50, 5000}, {NCS_OP_AllReduce, 2000, 2000}, {NCS_OP_Recv, 1900, 2100},
    {NCS_OP_GroupEnd, 2500, 2600}, {NCS_OP_AllGather, 800, 900}, {NCS_OP_AllReduce, 3000, 3100},
    {NCS_OP_Broadcast, 2950, 3050},
  };
  size_t ns = sizeof shape / sizeof *shape, n = 0;
  for (int rep = 0; rep < 4; rep++)
    for (size_t i = 0; i < ns && n < NCALLS; i++)
      x[n++] = call(shape[i].op, shape[i].s + 10000 * (uint64_t)rep, shape[i].e + 10000 * (uint64_t)rep);
  one = feed(x, n, 1);
  int ok = one && one->host_comm_ns > 0;
  for (size_t r = 2; ok && r <= n; r++) {
    run = feed(x, n, r);
    ok = run && same_facts(one, run);
    ncs_dfacts_free(run);
  }
  CHECK(ok, "dfacts: runs of 2..%zu calls give the same facts as call by call (host window, sweep, count)", n);
  ncs_dfacts_free(one);
  return check_done();
}
