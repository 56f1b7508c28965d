/* test_lockstep.c — the whole-job loader reading files in lockstep (decoder/model/jobload.c):
 * the straggler window (most open collectives at once) stays about a chunk wide whatever the
 * trace length, where reading whole files one after another opens every collective of the
 * trace; both ways give the same results; a missing rank (hang) and a truncated file are still
 * found; more files than file descriptors can be read in lockstep. Traces come from the
 * generator (decoder/io/synth.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "analysis/jobsum.h"
#include "base/settings.h"
#include "io/synth.h"
#include "io/trace.h"

static char *base;

/* Writes ranks x calls with chunk_calls calls per chunk into base/name; returns the files. */
static int gen(const char *name, int ranks, long calls, int chunk, int missing, char ***files) {
  struct ncs_synth_cfg c;
  ncs_synth_defaults(&c);
  c.ranks = ranks; c.hosts = 2; c.calls = calls; c.chunk_calls = chunk; c.threads = 2;
  c.straggler = 1; c.straggler_us = 50; c.straggler_frac = 0.2;
  if (missing >= 0) { c.missing_rank = missing; c.missing_seq = calls / 2; }
  char dir[512], err[256];
  snprintf(dir, sizeof dir, "%s/%s", base, name);
  if (ncs_synth_write(&c, dir, err, sizeof err)) { fprintf(stderr, "synth: %s\n", err); return -1; }
  char *p = dir;
  return ncs_paths_expand(1, &p, files);
}

static struct ncs_jobdata *load(int n, char **files, const char *lockstep, int threads) {
  setenv("NCCLSCOPE_LOCKSTEP", lockstep, 1);
  ncs_settings_read();
  struct ncs_load_opts o = {.threads = threads};
  struct ncs_jobdata *j = NULL;
  if (ncs_jobsum_load(n, files, &o, NULL, &j) != 0) { ncs_job_free(j); return NULL; }
  return j;
}

int main(void) {
  char tmpl[] = "/tmp/ncs-lockstep-XXXXXX";
  base = mkdtemp(tmpl);
  CHECK(base != NULL, "temporary directory");
  if (!base) return check_done();
  const int chunk = 256;
  char **fs = NULL, **fl = NULL;
  int ns = gen("short", 8, 2000, chunk, -1, &fs);
  int nl = gen("long", 8, 16000, chunk, -1, &fl);
  CHECK(ns == 8 && nl == 8, "lockstep: generated 8 + 8 traces");
  if (ns != 8 || nl != 8) return check_done();

  struct ncs_jobdata *ls = load(ns, fs, "1", 2), *ll = load(nl, fl, "1", 2);
  struct ncs_jobdata *wl = load(nl, fl, "0", 2), *l1 = load(nl, fl, "1", 1);
  CHECK(ls && ll && wl && l1, "lockstep: the four loads succeed");
  if (!ls || !ll || !wl || !l1) return check_done();
  CHECK(ll->lockstep && !wl->lockstep, "lockstep: NCCLSCOPE_LOCKSTEP forces the way of reading");
  size_t ps = ncs_strag_peak_window(ls->strag), pl = ncs_strag_peak_window(ll->strag);
  size_t pw = ncs_strag_peak_window(wl->strag);
  /* ranks stay within about a chunk (plus the aligner's hold of a chunk) of each other */
  CHECK(pl <= 4 * (size_t)chunk, "lockstep: window %zu open collectives at 16000 calls (<= 4 chunks of %d)", pl, chunk);
  CHECK(ps <= 4 * (size_t)chunk && pl <= 4 * (size_t)chunk,
        "lockstep: window does not grow with length (8x the calls): %zu at 2000 calls, %zu at 16000", ps, pl);
  CHECK(pw >= 15000, "lockstep: whole files one after another open every collective (%zu)", pw);
  CHECK(ncs_strag_collectives(ll->strag) == 16000 && ncs_strag_collectives(wl->strag) == 16000 &&
        ncs_strag_collectives(l1->strag) == 16000,
        "lockstep: all 16000 collectives line up in every way of reading");
  CHECK(ncs_strag_skew_max_us(ll->strag) == ncs_strag_skew_max_us(wl->strag) &&
        ncs_strag_skew_mean_us(ll->strag) == ncs_strag_skew_mean_us(wl->strag),
        "lockstep: same skew as whole-file reading (%.3f / %.3f us)", ncs_strag_skew_mean_us(ll->strag),
        ncs_strag_skew_mean_us(wl->strag));
  const struct ncs_strag_rank *ra, *rb, *rc;
  int na = ncs_strag_ranks(ll->strag, &ra), nb = ncs_strag_ranks(wl->strag, &rb), nc = ncs_strag_ranks(l1->strag, &rc);
  int same = na == nb && na == nc;
  for (int i = 0; same && i < na; i++)
    same = ra[i].file == rb[i].file && ra[i].last_count == rb[i].last_count && ra[i].wait_caused_s == rb[i].wait_caused_s &&
           ra[i].file == rc[i].file && ra[i].last_count == rc[i].last_count && ra[i].wait_caused_s == rc[i].wait_caused_s;
  CHECK(same, "lockstep: same straggler table (1 and 2 threads, lockstep and whole files)");
  CHECK(na > 0 && ra[0].rank == 1, "lockstep: the straggler (rank 1) is first (got %d)", na > 0 ? ra[0].rank : -2);
  int stats = ll->nops == wl->nops;
  for (int k = 0; stats && k < ll->nops; k++)
    stats = ll->ops[k].calls == wl->ops[k].calls && ll->ops[k].bytes == wl->ops[k].bytes &&
            ll->ops[k].time_s == wl->ops[k].time_s;
  for (int i = 0; stats && i < nl; i++)
    stats = ll->r[i].calls == wl->r[i].calls &&
            ll->r[i].t_first == wl->r[i].t_first && ll->r[i].t_last == wl->r[i].t_last;
  CHECK(stats, "lockstep: same per-op and per-rank figures as whole-file reading");

  /* a rank that stops halfway (a hang): its file ends early, the others wait for nothing */
  char **fm = NULL;
  int nm = gen("hang", 8, 8000, chunk, 5, &fm);
  struct ncs_jobdata *jm = nm == 8 ? load(nm, fm, "1", 2) : NULL;
  CHECK(jm && ncs_strag_incomplete(jm->strag) > 0 && ncs_strag_collectives(jm->strag) == 8000 / 2 - 1,
        "lockstep: a rank stopping at seq 4000: %llu complete, %llu incomplete",
        jm ? (unsigned long long)ncs_strag_collectives(jm->strag) : 0ull,
        jm ? (unsigned long long)ncs_strag_incomplete(jm->strag) : 0ull);
  CHECK(jm && ncs_strag_peak_window(jm->strag) <= 4 * (size_t)chunk + 8000 / 2,
        "lockstep: the hang's window stays bounded (%zu)", jm ? ncs_strag_peak_window(jm->strag) : 0);

  /* 96 files in lockstep with 40 file descriptors: files are parked between their steps */
  char **fd = NULL;
  int nd = gen("fds", 96, 600, 64, -1, &fd);
  struct rlimit old, lim;
  int lowered = nd == 96 && getrlimit(RLIMIT_NOFILE, &old) == 0;
  if (lowered) { lim = old; lim.rlim_cur = 40; lowered = setrlimit(RLIMIT_NOFILE, &lim) == 0; }
  struct ncs_jobdata *jd = lowered ? load(nd, fd, "1", 2) : NULL;
  if (lowered) setrlimit(RLIMIT_NOFILE, &old);
  int allread = jd != NULL;
  for (int i = 0; jd && i < nd; i++) allread &= jd->r[i].read_rc == 0 && jd->r[i].calls > 0;
  CHECK(allread && ncs_strag_collectives(jd->strag) == 600,
        "lockstep: 96 files read side by side with 40 file descriptors (%llu collectives lined up)",
        jd ? (unsigned long long)ncs_strag_collectives(jd->strag) : 0ull);
  ncs_job_free(jd);
  if (nd > 0) ncs_paths_free(fd, nd);

  ncs_job_free(ls); ncs_job_free(ll); ncs_job_free(wl); ncs_job_free(l1); ncs_job_free(jm);
  ncs_paths_free(fs, ns); ncs_paths_free(fl, nl); if (nm > 0) ncs_paths_free(fm, nm);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
  return check_done();
}
