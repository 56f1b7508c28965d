/* test_ivunion.c — model/ivunion.h against the exact union of the same intervals (all sorted at
 * once, then swept), in the orders traces give: one thread's intervals in order (back to back,
 * overlapping, with gaps), several threads' chunks interleaved (each chunk in order, chunks of
 * one time range from each thread in turn; with gaps between a thread's calls the threads'
 * times drift apart, so a thread's intervals arrive after the others' later ones: exact while
 * that is under NCS_IVU_CAP / 2 intervals when the union is told no thread (one stream), and
 * with batches of any length up to the buffer's bound when it is told each interval's thread
 * and the chunk ends (model/ivlanes.h), threads calling at different rates too), fewer than
 * NCS_IVU_CAP in random order, and the count of what it may lack: a thread that appears after
 * the first chunk is late, and the total then lies within late_ns below the exact union. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "model/ivunion.h"

static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }
static int cmp_pair(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}
static double exact(uint64_t (*iv)[2], size_t n) {
  uint64_t (*a)[2] = malloc((n ? n : 1) * sizeof *a);
  if (!a) return -1;
  for (size_t i = 0; i < n; i++) { a[i][0] = iv[i][0]; a[i][1] = iv[i][1]; }
  qsort(a, n, sizeof *a, cmp_pair);
  double t = 0;
  uint64_t s = 0, e = 0;
  int open = 0;
  for (size_t i = 0; i < n; i++) {
    if (a[i][1] <= a[i][0]) continue;
    if (open && a[i][0] <= e) { if (a[i][1] > e) e = a[i][1]; continue; }
    if (open) t += (double)(e - s);
    s = a[i][0]; e = a[i][1]; open = 1;
  }
  if (open) t += (double)(e - s);
  free(a);
  return t;
}
static double streamed(uint64_t (*iv)[2], size_t n) {
  struct ncs_ivu u = {0};
  for (size_t i = 0; i < n; i++) ncs_ivu_add(&u, 0, iv[i][0], iv[i][1]);
  return ncs_ivu_total(&u);
}

/* nthr threads (ids 1 ..), thread k with calls of up to `len` ns and gaps of up to gap * (k + 1)
 * ns (rates that differ, times that drift apart), written as chunks of a batch of `batch`
 * calls per thread, thread after thread, the union told each thread and each chunk end;
 * `late_from`: thread nthr's calls start only in that chunk (0: from the first). Returns 1
 * when the total is exact (and nothing counted late), or, with `late` (expected), when
 * something was counted late and the total lies within late_ns below the exact union; with
 * expect_late 2, when the total lies within late_ns below the exact union (late or not). */
static int slow_last; /* thread k's gaps up to gap * (nthr - k) instead: the threads seen last are the slowest */
static int lanes(size_t nthr, size_t per, size_t batch, uint64_t len, uint64_t gap, size_t late_from, int expect_late, uint64_t seed) {
  uint64_t (*iv)[2] = malloc(nthr * per * sizeof *iv);
  uint32_t *who = malloc(nthr * per * sizeof *who);
  uint64_t *now = malloc(nthr * sizeof *now);
  size_t *next = calloc(nthr, sizeof *next);
  if (!iv || !who || !now || !next) { free(iv); free(who); free(now); free(next); return 0; }
  for (size_t k = 0; k < nthr; k++) now[k] = 1000 + rnd(&seed) % 100;
  struct ncs_ivu u = {0};
  ncs_ivu_by_chunk(&u);
  size_t m = 0;
  for (size_t c = 0; c * batch < per; c++) {
    for (size_t k = 0; k < nthr; k++) {
      if (late_from && k == nthr - 1 && c < late_from) { now[k] += batch * (len / 2 + gap * (k + 1) / 2); continue; }
      for (size_t i = 0; i < batch && next[k] < per; i++, next[k]++) {
        uint64_t l = 1 + rnd(&seed) % len;
        iv[m][0] = now[k]; iv[m][1] = now[k] + l; who[m] = (uint32_t)k + 1;
        ncs_ivu_add(&u, who[m], iv[m][0], iv[m][1]);
        m++;
        now[k] += l + rnd(&seed) % (gap * (slow_last ? nthr - k : k + 1) + 1);
      }
    }
    ncs_ivu_chunk(&u);
  }
  double got = ncs_ivu_total(&u), want = exact(iv, m); /* the last flush may count late ones too */
  uint64_t late = u.late, late_ns = u.late_ns;
  int ok = expect_late == 2 ? got <= want && want - got <= (double)late_ns
           : expect_late ? late > 0 && got <= want && want - got <= (double)late_ns : got == want && late == 0;
  if (!ok) fprintf(stderr, "  lanes: %zu threads, batches of %zu: %.0f, exact %.0f, late %llu (%llu ns)\n", nthr, batch, got, want,
                   (unsigned long long)late, (unsigned long long)late_ns);
  free(iv); free(who); free(now); free(next);
  return ok;
}

/* nthr threads, each with calls of up to `len` ns separated by gaps of up to `gap` ns (gap 0:
 * back to back or overlapping), written as chunks of `chunk` calls, thread after thread */
static int threads(size_t nthr, size_t per, size_t chunk, uint64_t len, uint64_t gap, uint64_t seed) {
  size_t n = nthr * per;
  uint64_t (*iv)[2] = malloc(n * sizeof *iv), (*t)[2] = malloc(nthr * per * sizeof *t);
  if (!iv || !t) { free(iv); free(t); return 0; }
  for (size_t k = 0; k < nthr; k++) {
    uint64_t now = 1000 + rnd(&seed) % 100;
    for (size_t i = 0; i < per; i++) {
      uint64_t l = rnd(&seed) % (len + 1);
      t[k * per + i][0] = now; t[k * per + i][1] = now + l;
      now += gap ? l + rnd(&seed) % gap : l / 2; /* gap 0: the next one overlaps this one */
    }
  }
  size_t m = 0;
  for (size_t c = 0; c * chunk < per; c++)
    for (size_t k = 0; k < nthr; k++)
      for (size_t i = c * chunk; i < per && i < (c + 1) * chunk; i++) { iv[m][0] = t[k * per + i][0]; iv[m][1] = t[k * per + i][1]; m++; }
  int ok = streamed(iv, n) == exact(iv, n);
  free(iv); free(t);
  return ok;
}

static int shuffled(size_t n, uint64_t seed) {
  uint64_t (*iv)[2] = malloc((n ? n : 1) * sizeof *iv);
  if (!iv) return 0;
  for (size_t i = 0; i < n; i++) { iv[i][0] = rnd(&seed) % 100000; iv[i][1] = iv[i][0] + rnd(&seed) % 300; }
  int ok = streamed(iv, n) == exact(iv, n);
  free(iv);
  return ok;
}

int main(void) {
  int bad = 0, cases = 0;
  size_t thr[] = {1, 2, 4};
  size_t chunks[] = {1, 37, 500};
  uint64_t gaps[] = {0, 1, 50};
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 3; b++)
      for (size_t c = 0; c < 3; c++) {
        cases++;
        if (!threads(thr[a], 6000, chunks[b], 40, gaps[c], 0x9e3779b97f4a7c15ull + a * 7 + b * 3 + c)) {
          bad++;
          fprintf(stderr, "  %zu threads, chunks of %zu, gap %llu: wrong\n", thr[a], chunks[b], (unsigned long long)gaps[c]);
        }
      }
  CHECK(bad == 0, "ivunion: %d of %d interleavings (1-4 threads' chunks of 1-500 calls, back to back, overlapping or with gaps) total the exact union", cases - bad, cases);
  bad = cases = 0;
  size_t ns[] = {0, 1, 2, 100, NCS_IVU_CAP - 1};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    cases++;
    if (!shuffled(ns[i], 88172645463325252ull + i)) { bad++; fprintf(stderr, "  %zu shuffled: wrong\n", ns[i]); }
  }
  CHECK(bad == 0, "ivunion: %d of %d buffers in random order (0 to NCS_IVU_CAP - 1 intervals) total the exact union", cases - bad, cases);
  bad = cases = 0;
  size_t lthr[] = {2, 4}, batches[] = {3000, 20000};
  for (size_t a = 0; a < 2; a++)
    for (size_t b = 0; b < 2; b++)
      for (uint64_t g = 0; g <= 40; g += 40) {
        cases++;
        bad += !lanes(lthr[a], 60000, batches[b], 200, g, 0, 0, 0x2545f4914f6cdd1dull + a * 5 + b * 3 + g);
      }
  CHECK(bad == 0, "ivunion: %d of %d runs of 2 or 4 threads' batches of 3,000 or 20,000 calls per chunk (over NCS_IVU_CAP / 2), at equal and drifting rates, told the threads and chunk ends, total the exact union, none counted late", cases - bad, cases);
  CHECK(lanes(3, 30000, 10000, 200, 40, 1, 1, 77), "ivunion: a thread whose calls begin after the first chunk is counted late, and the total lies within late_ns below the exact union");
  /* past the lanes held in the struct (NCS_LANES_IN) and past NCS_LANES: a thread with no lane
   * of its own shares the untracked one, whose intervals are committed as they come */
  slow_last = 1; /* the threads past the first lanes the slowest: their intervals come after others' later ones */
  CHECK(lanes(NCS_LANES_IN + 3, 12000, 3000, 200, 40, 0, 0, 5), "ivunion: %d threads (past the %d lanes in the struct; the later threads the slowest), batches over NCS_IVU_CAP / 2: the exact union, none counted late", NCS_LANES_IN + 3, NCS_LANES_IN);
  CHECK(lanes(NCS_LANES, 3000, 1500, 200, 40, 0, 0, 6), "ivunion: %d threads (every lane in use; the later threads the slowest): the exact union, none counted late", NCS_LANES);
  CHECK(lanes(NCS_LANES + 6, 3000, 1500, 200, 40, 0, 2, 7), "ivunion: %d threads (6 past NCS_LANES, sharing the untracked lane): the total within late_ns (what was counted late) below the exact union", NCS_LANES + 6);
  CHECK(lanes(NCS_LANES + 60, 3000, 1500, 200, 40, 0, 2, 8), "ivunion: %d threads (60 past NCS_LANES): the total within late_ns below the exact union", NCS_LANES + 60);
  slow_last = 0;
  /* a thread's batch longer than the buffer's bound: forced commits, the rest counted late */
  CHECK(lanes(2, 1500000, 1500000, 50, 10, 0, 1, 99), "ivunion: a batch over NCS_IVU_MAX intervals: forced commits, the other thread's intervals counted late, the total within late_ns below the exact union");
  return check_done();
}
