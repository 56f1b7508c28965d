/* test_launches.c — the compact launch log (decoder/model/launches.c) gives back every launch
 * it was given, in order and exactly: a DDP-like run of one-word launches across many blocks,
 * then launches that escape (a gap over 16.7 ms, an entry before the previous one, more
 * distinct shapes than the table holds, an unknown kernel operation -1), and again after a
 * reset that keeps its blocks. The truth is the array the test fed it. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/launches.h"

static int same(const struct ncs_launch *a, const struct ncs_launch *b) {
  return a->t_first == b->t_first && a->op == b->op && a->kop == b->kop && a->busbytes == b->busbytes && a->steps == b->steps;
}

int main(void) {
  enum { N = 200000 };
  struct ncs_launch *in = calloc(N, sizeof *in);
  struct ncs_launches l;
  memset(&l, 0, sizeof l);
  uint64_t t = 1000000000ull;
  srand(7);
  for (int i = 0; i < N; i++) {
    int escape = i > N / 2 && i % 997 == 0;
    t += escape ? (i % 2 ? 20000000ull : 0) : (uint64_t)(rand() % 50000);
    if (escape && i % 2 == 0) t -= 12345; /* an entry before the previous one */
    int shape = i > N / 2 ? rand() % 400 : i % 4; /* past half: more shapes than the table holds */
    in[i] = (struct ncs_launch){t, 1 + (unsigned)(shape % 5), shape % 7 == 6 ? -1 : shape % 6, 1024.0 * (shape + 1) * 1.5,
                                (double)(1 + shape % 3)};
    if (ncs_launches_add(&l, &in[i]) != 0) break;
  }
  CHECK(l.log.n == N, "launches: %d launches kept (got %llu)", N, (unsigned long long)l.log.n);
  struct ncs_launch_cur c;
  struct ncs_launch x;
  ncs_launches_begin(&l, &c);
  int i = 0, bad = -1;
  while (ncs_launches_next(&l, &c, &x)) {
    if (i >= N || (!same(&x, &in[i]) && bad < 0)) bad = i;
    i++;
  }
  CHECK(i == N && bad < 0, "launches: read back %d of %d in order, every field equal (first difference at %d)", i, N, bad);
  CHECK(l.nshape == NCS_LAUNCH_SHAPES, "launches: the shape table filled (%u), the rest escaped", l.nshape);
  ncs_launches_begin(&l, &c);
  int again = 0;
  while (ncs_launches_next(&l, &c, &x)) again++;
  CHECK(again == N, "launches: a second cursor reads them all again (%d)", again);
  struct ncs_wlog_block *first = l.log.head;
  ncs_launches_reset(&l); /* the blocks kept for another file's launches */
  for (int k = 0; k < N / 2; k++) ncs_launches_add(&l, &in[N - 1 - k]);
  ncs_launches_begin(&l, &c);
  int n2 = 0, bad2 = -1;
  while (ncs_launches_next(&l, &c, &x)) {
    if (n2 >= N / 2 || (!same(&x, &in[N - 1 - n2]) && bad2 < 0)) bad2 = n2;
    n2++;
  }
  CHECK(l.log.head == first && n2 == N / 2 && bad2 < 0, "launches: after a reset, its first block reused, %d new launches read back exactly (first difference at %d)", n2, bad2);
  ncs_launches_free(&l);
  ncs_launches_begin(&l, &c);
  CHECK(!ncs_launches_next(&l, &c, &x) && l.log.n == 0, "launches: freed, the log is empty");
  free(in);
  return check_done();
}
