/* test_jobs_model.c — the grouping rules of decoder/model/jobs.c (docs/CLI.md, "Several jobs
 * in one directory") on hand-made PROCESS and COMM records, the cases a launch of the doubles
 * cannot stage: ranks of one launch with no communicator in common, a sweep reusing its
 * rendezvous id, torchrun's "none" run id, a probe that two jobs could claim, restart order,
 * and the names --job takes. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/jobs.h"

#define S 1000000000ull /* ns per second */

struct kv2 { const char *k, *v; };
/* File `i`: created at t0 s, last sign of life t1 s, the env pairs, and communicators ids[]
 * (0-terminated) of nranks 4. */
static void feed(struct ncs_jobset *s, int i, unsigned t0, unsigned t1, const struct kv2 *env, const uint64_t *ids) {
  struct ncs_kv kv[16];
  size_t n = 0;
  for (; env && env[n].k; n++) kv[n] = (struct ncs_kv){env[n].k, env[n].v, strlen(env[n].v)};
  struct ncs_process p = {.path = "x", .major = 1, .minor = 1, .created_realtime_ns = t0 * S, .kv = kv, .nkv = n};
  struct ncs_visitor v = ncs_jobset_visitor(s, i);
  v.process(v.ctx, &p);
  for (; ids && *ids; ids++) {
    struct ncs_comm c = {.comm = 1, .comm_id = *ids, .handle = 1, .rank = 0, .nranks = 4};
    v.comm(v.ctx, &c);
  }
  struct ncs_read_status st = {.last_realtime_ns = t1 * S};
  ncs_jobset_file_done(s, i, 0, &st);
}

static int njobs(const struct ncs_jobset *s) {
  const struct ncs_job_info *j;
  return ncs_jobset_jobs(s, &j);
}

int main(void) {
  /* 1. two communicators, no file in both, one launch (same Slurm step, overlapping): one
   * attempt; the same with only MASTER_ADDR:PORT in common: two jobs */
  {
    struct kv2 e[] = {{"env.SLURM_JOB_ID", "77"}, {"env.SLURM_STEP_ID", "0"}, {"env.MASTER_PORT", "29500"}, {0, 0}};
    struct kv2 w[] = {{"env.MASTER_ADDR", "n1"}, {"env.MASTER_PORT", "29500"}, {0, 0}};
    uint64_t a[] = {11, 0}, b[] = {22, 0};
    struct ncs_jobset *s = ncs_jobset_new(4), *t = ncs_jobset_new(4);
    feed(s, 0, 10, 20, e, a); feed(s, 1, 10, 20, e, a); feed(s, 2, 11, 21, e, b); feed(s, 3, 11, 21, e, b);
    feed(t, 0, 10, 20, w, a); feed(t, 1, 10, 20, w, a); feed(t, 2, 11, 21, w, b); feed(t, 3, 11, 21, w, b);
    ncs_jobset_finish(s); ncs_jobset_finish(t);
    const struct ncs_job_info *j;
    CHECK(njobs(s) == 1 && (ncs_jobset_jobs(s, &j), j[0].nattempts == 1 && j[0].att[0].n == 4),
          "jobs model: ranks of one Slurm step with no communicator in common are one attempt");
    CHECK(njobs(t) == 2, "jobs model: a master address and port in common never joins two communicators");
    ncs_jobset_free(s); ncs_jobset_free(t);
  }
  /* 2. a sweep with --rdzv-id=$SLURM_JOB_ID: same run id, restart 0 both, one after the
   * other: two jobs; torchrun's default run id "none" joins nothing */
  {
    struct kv2 e[] = {{"env.TORCHELASTIC_RUN_ID", "4242"}, {"env.TORCHELASTIC_RESTART_COUNT", "0"}, {0, 0}};
    struct kv2 n[] = {{"env.TORCHELASTIC_RUN_ID", "none"}, {"env.TORCHELASTIC_RESTART_COUNT", "0"}, {0, 0}};
    struct kv2 n1[] = {{"env.TORCHELASTIC_RUN_ID", "none"}, {"env.TORCHELASTIC_RESTART_COUNT", "1"}, {0, 0}};
    uint64_t a[] = {11, 0}, b[] = {22, 0};
    struct ncs_jobset *s = ncs_jobset_new(2), *t = ncs_jobset_new(2);
    feed(s, 0, 10, 20, e, a); feed(s, 1, 30, 40, e, b);
    feed(t, 0, 10, 20, n, a); feed(t, 1, 30, 40, n1, b);
    ncs_jobset_finish(s); ncs_jobset_finish(t);
    const struct ncs_job_info *j;
    CHECK(njobs(s) == 2, "jobs model: a sweep reusing one run id (restart 0 each) is two jobs");
    CHECK(njobs(t) == 2 && (ncs_jobset_jobs(t, &j), !j[0].run_id[0]),
          "jobs model: TORCHELASTIC_RUN_ID=none is no run id: restarts under it are separate jobs");
    ncs_jobset_free(s); ncs_jobset_free(t);
  }
  /* 3. restarts: attempts in restart order whatever the file order; --job names */
  {
    struct kv2 r0[] = {{"env.TORCHELASTIC_RUN_ID", "el"}, {"env.TORCHELASTIC_RESTART_COUNT", "0"}, {0, 0}};
    struct kv2 r1[] = {{"env.TORCHELASTIC_RUN_ID", "el"}, {"env.TORCHELASTIC_RESTART_COUNT", "1"}, {0, 0}};
    struct kv2 r2[] = {{"env.TORCHELASTIC_RUN_ID", "el"}, {"env.TORCHELASTIC_RESTART_COUNT", "2"}, {0, 0}};
    uint64_t a[] = {11, 0}, b[] = {22, 0}, c[] = {33, 0};
    struct ncs_jobset *s = ncs_jobset_new(6);
    feed(s, 0, 50, 60, r2, c); feed(s, 1, 10, 20, r0, a); feed(s, 2, 30, 40, r1, b);
    feed(s, 3, 50, 60, r2, c); feed(s, 4, 10, 20, r0, a); feed(s, 5, 30, 40, r1, b);
    ncs_jobset_finish(s);
    const struct ncs_job_info *j;
    int ok = njobs(s) == 1 && (ncs_jobset_jobs(s, &j), j[0].nattempts == 3);
    CHECK(ok && j[0].att[0].restart_count == 0 && j[0].att[1].restart_count == 1 && j[0].att[2].restart_count == 2 &&
          ncs_jobset_attempt_of(s, 1) == 1 && ncs_jobset_attempt_of(s, 0) == 3,
          "jobs model: three attempts of one run, in restart order (files listed out of order)");
    int *p = NULL;
    int n = ncs_jobset_pick(s, "1.2", &p);
    CHECK(n == 2 && p[0] == 2 && p[1] == 5, "jobs model: --job 1.2 is attempt 2's files");
    free(p);
    n = ncs_jobset_pick(s, "el", &p);
    CHECK(n == 6, "jobs model: --job RUN_ID is the whole job");
    free(p);
    CHECK(ncs_jobset_pick(s, "1.4", &p) < 0 && ncs_jobset_pick(s, "2", &p) < 0 && ncs_jobset_pick(s, "1x", &p) < 0,
          "jobs model: --job names no attempt 4, no job 2, nothing for 1x");
    ncs_jobset_free(s);
  }
  /* 4. a process in no communicator: joins the one attempt of its launch; two candidates (same
   * master port, both running): apart; no launcher ids: apart */
  {
    struct kv2 w[] = {{"env.MASTER_ADDR", "n1"}, {"env.MASTER_PORT", "29500"}, {0, 0}};
    uint64_t a[] = {11, 0}, b[] = {22, 0};
    struct ncs_jobset *s = ncs_jobset_new(3), *t = ncs_jobset_new(4);
    feed(s, 0, 10, 20, w, a); feed(s, 1, 12, 13, w, NULL); feed(s, 2, 12, 13, NULL, NULL);
    feed(t, 0, 10, 20, w, a); feed(t, 1, 10, 20, w, b); feed(t, 2, 12, 13, w, NULL); feed(t, 3, 30, 31, w, NULL);
    ncs_jobset_finish(s); ncs_jobset_finish(t);
    CHECK(njobs(s) == 1 && ncs_jobset_job_of(s, 1) == 0 && ncs_jobset_job_of(s, 2) == -1,
          "jobs model: a GetVersion-only process joins the one job of its launch; without launcher ids it stays apart");
    CHECK(njobs(t) == 2 && ncs_jobset_job_of(t, 2) == -1 && ncs_jobset_job_of(t, 3) == -1,
          "jobs model: a probe two running jobs could claim, or one running after both, stays apart (no phantom job)");
    ncs_jobset_free(s); ncs_jobset_free(t);
  }
  /* 5. nothing: no file, or files that could not be read */
  {
    struct ncs_jobset *s = ncs_jobset_new(0), *t = ncs_jobset_new(2);
    ncs_jobset_file_done(t, 0, 2, NULL);
    ncs_jobset_file_done(t, 1, 2, NULL);
    ncs_jobset_finish(s); ncs_jobset_finish(t);
    CHECK(njobs(s) == 0 && njobs(t) == 0 && ncs_jobset_job_of(t, 0) == -1, "jobs model: no file, unreadable files: no job");
    ncs_jobset_free(s); ncs_jobset_free(t);
  }
  return check_done();
}
