/* test_ivunion_calls.c — ncs_ivu_add_calls (model/ivunion.h: a run of calls' host intervals, the
 * current lane and the latest buffered interval kept in locals) leaves the union in the state
 * ncs_ivu_add one call at a time leaves it: after every run the same buffered intervals and runs,
 * the same lanes (thread, latest start, current one), and at the end the same total, late
 * intervals and forced commits. Calls of 1 to 5 threads in batches per chunk (a thread's batch
 * after another's, as a trace holds them), overlapping and touching ones, zero-length and
 * reversed ones, a thread's call out of order (a new run), batches longer than the buffer (flushes
 * inside a run) and runs that switch threads inside them; runs of 1 to 700 calls. The same for
 * ncs_ivu_add_gpus on those intervals as GPU times, every 5th one flagged (skipped: what
 * ncs_ivu_add of the unflagged ones alone leaves). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/ivunion.h"

#define NC 60000

static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

/* chunk[i]: a chunk ends after call i */
static size_t make(struct ncs_call *c, unsigned char *chunk, int threads, uint64_t seed) {
  uint64_t t[8] = {0};
  size_t n = 0;
  for (int th = 0; th < threads; th++) t[th] = 1000000 + rnd(&seed) % 5000;
  while (n < NC - 4000) {
    for (int th = 0; th < threads && n < NC - 4000; th++) {
      size_t batch = 1 + rnd(&seed) % (seed % 3 ? 900 : 7000); /* past the buffer's 4,096 too */
      for (size_t k = 0; k < batch && n < NC - 1; k++) {
        uint64_t r = rnd(&seed);
        uint64_t gap = r % 7 == 0 ? 0 : r % 400;            /* touching / overlapping / apart */
        uint64_t len = r % 11 == 0 ? 0 : 50 + (r >> 20) % 900; /* zero-length now and then */
        uint64_t s = t[th] + gap - (r % 13 == 0 ? 120 : 0);  /* overlapping the one before */
        if (r % 97 == 0 && s > 20000) s -= 20000;           /* out of order: a new run */
        c[n] = (struct ncs_call){.op = 1, .thread = (uint32_t)th + 1, .t_enter = s, .t_exit = s + len};
        if (r % 89 == 0) c[n].t_exit = s - 1;               /* reversed: nothing */
        chunk[n] = 0;
        n++;
        t[th] = s + len > t[th] ? s + len : t[th];
      }
    }
    if (n) chunk[n - 1] = 1; /* every thread's batch, then the chunk's end */
  }
  return n;
}

/* The union's state as text (buffer, runs, lanes). */
static void state(struct ncs_ivu *u, char *b, size_t cap) {
  size_t k = 0;
  k += (size_t)snprintf(b + k, cap - k, "n %u cap %u runs %u cur %u lanes %u front %llu |", u->n, u->cap, u->runs.nrun, u->lanes.cur,
                        u->lanes.n, (unsigned long long)u->frontier);
  for (uint32_t i = 0; i < u->n && k < cap - 64; i++)
    k += (size_t)snprintf(b + k, cap - k, " %llx-%llx", (unsigned long long)u->iv[i][0], (unsigned long long)u->iv[i][1]);
  for (uint32_t i = 0; i < u->runs.nrun && k < cap - 64; i++) k += (size_t)snprintf(b + k, cap - k, " r%u", u->runs.run[i]);
  for (uint32_t i = 0; i < u->lanes.n && k < cap - 64; i++) {
    struct ncs_lane *ln = ncs_lane_at(&u->lanes, i);
    k += (size_t)snprintf(b + k, cap - k, " L%u:%llu", ln->thread, (unsigned long long)ln->last);
  }
}

/* GPU times of c's intervals, every 5th flagged */
static void as_gpus(const struct ncs_call *c, size_t n, struct ncs_gpu_time *g) {
  for (size_t i = 0; i < n; i++)
    g[i] = (struct ncs_gpu_time){.thread = c[i].thread, .ref = i, .gpu_start = c[i].t_enter, .gpu_end = c[i].t_exit, .flags = i % 5 == 3};
}

static void scenario(int threads, uint64_t seed, int gpus) {
  static struct ncs_call c[NC];
  static struct ncs_gpu_time g[NC];
  static unsigned char chunk[NC];
  static char a[1 << 17], b[1 << 17];
  size_t n = make(c, chunk, threads, seed);
  if (gpus) as_gpus(c, n, g);
  struct ncs_ivu one = {0}, run = {0};
  ncs_ivu_by_chunk(&one);
  ncs_ivu_by_chunk(&run);
  uint64_t x = seed * 7 + 1;
  size_t differ = 0, runs = 0;
  for (size_t i = 0; i < n;) {
    size_t k = 1 + rnd(&x) % 700;
    if (k > n - i) k = n - i;
    size_t m = 0; /* a run ends at a chunk end at the latest */
    while (m < k && !chunk[i + m]) m++;
    if (m < k) k = m + 1;
    for (size_t j = i; j < i + k; j++)
      if (!gpus || !g[j].flags) ncs_ivu_add(&one, c[j].thread, c[j].t_enter, c[j].t_exit);
    if (gpus) ncs_ivu_add_gpus(&run, g + i, k);
    else ncs_ivu_add_calls(&run, c + i, k);
    i += k;
    if (chunk[i - 1]) { ncs_ivu_chunk(&one); ncs_ivu_chunk(&run); }
    state(&one, a, sizeof a);
    state(&run, b, sizeof b);
    differ += strcmp(a, b) != 0;
    runs++;
  }
  double t1 = ncs_ivu_total(&one), t2 = ncs_ivu_total(&run);
  const char *what = gpus ? "gpus" : "calls";
  CHECK(!differ, "ivunion %s (%d threads, seed %llu): after each of %zu runs the buffer, runs and lanes as one at a time leaves them (%zu differ)",
        what, threads, (unsigned long long)seed, runs, differ);
  CHECK(t1 == t2 && one.late == run.late && one.late_ns == run.late_ns && one.forced == run.forced,
        "ivunion %s (%d threads, seed %llu): total %.0f / %.0f, late %llu / %llu, forced %llu / %llu", what, threads,
        (unsigned long long)seed, t1, t2, (unsigned long long)one.late, (unsigned long long)run.late,
        (unsigned long long)one.forced, (unsigned long long)run.forced);
}

int main(void) {
  for (int gpus = 0; gpus < 2; gpus++) {
    scenario(1, 11, gpus);
    scenario(2, 12, gpus);
    scenario(3, 13, gpus);
    scenario(5, 14, gpus);
    scenario(2, 15, gpus);
  }
  return check_done();
}
