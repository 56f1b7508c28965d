/* test_connowner.c — connection lines given to the communicator whose call was in flight when
 * NCCL printed them (model/connowner.h, rule 2), with the calls handed one at a time
 * (ncs_cown_call) and in runs (ncs_cown_calls, the loader's stretches). Two communicators of the
 * same rank, size and device, so rule 3 names neither: a line is given only through the calls
 * in flight at it. 300 lines, 1 us apart; line k's call (comm 1, or 2 when k % 3 == 0) spans
 * it, a call of the other comm runs between two lines, calls without a communicator span
 * every line, and calls before the first line and after the last span none. Truth: the comm
 * of line k's call, computed here; lines 0-9 get no call in flight (left unsettled). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/connowner.h"

#define NL 300

struct got { uint32_t comm[NL]; int n; };
static void given(void *ctx, uint32_t comm, const struct ncs_tconn *c) {
  struct got *g = ctx;
  if (g->n < NL) g->comm[g->n] = comm;
  g->n++;
}

static uint32_t want_comm(int k) { return k < 10 ? 0 : k % 3 == 0 ? 2 : 1; }

/* The calls in time order: before the lines, then per line k its call (k >= 10), one of the
 * other comm between lines k and k + 1, one of no comm; then after the lines. */
static int make_calls(struct ncs_call *c) {
  int n = 0;
  c[n++] = (struct ncs_call){.comm = 1, .t_enter = 10, .t_exit = 400};
  c[n++] = (struct ncs_call){.comm = 2, .t_enter = 100, .t_exit = 499};
  for (int k = 0; k < NL; k++) {
    uint64_t t = 1000 * (uint64_t)k + 500; /* line k */
    uint32_t mine = k % 3 == 0 ? 2 : 1;
    if (k >= 10) c[n++] = (struct ncs_call){.comm = mine, .t_enter = t - 300, .t_exit = t + 300};
    c[n++] = (struct ncs_call){.comm = 3 - mine, .t_enter = t + 350, .t_exit = t + 650};
    c[n++] = (struct ncs_call){.comm = 0, .t_enter = t - 10, .t_exit = t + 10};
  }
  c[n++] = (struct ncs_call){.comm = 1, .t_enter = 1000 * NL + 501, .t_exit = 1000 * NL + 900};
  c[n++] = (struct ncs_call){.comm = 2, .t_enter = 1000 * NL + 600, .t_exit = 1000 * NL + 2000};
  return n;
}

static int run(int runs, int *parsed) {
  struct ncs_cown *o = ncs_cown_new();
  for (uint32_t i = 1; i <= 2; i++) {
    struct ncs_comm cm = {.comm = i, .comm_id = 0xabc0 + i, .handle = 0x1000 * i, .rank = 0, .nranks = 2, .device = 0};
    ncs_cown_comm(o, &cm);
  }
  static const char line[] = "node1:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via P2P/IPC";
  *parsed = 1;
  for (int k = 0; k < NL; k++) {
    struct ncs_nl_rec r;
    if (ncs_nl_parse(line, strlen(line), &r) != NCS_NL_TRANSPORT) *parsed = 0;
    ncs_cown_line(o, &r, 1000 * (uint64_t)k + 500);
  }
  static struct ncs_call c[4 * NL];
  int n = make_calls(c), len = 1;
  for (int i = 0; i < n;) {
    if (!runs) { ncs_cown_call(o, c[i].comm, c[i].t_enter, c[i].t_exit); i++; continue; }
    int m = i + len <= n ? len : n - i;
    ncs_cown_calls(o, c + i, (size_t)m);
    i += m;
    len = len % 37 + 1;
  }
  struct got g = {.n = 0};
  uint64_t unsettled = ncs_cown_settle(o, given, &g);
  ncs_cown_free(o);
  int bad = 0, k = 0;
  for (int i = 0; i < g.n && i < NL; i++) { /* given in line order: the settled ones are lines 10.. */
    while (k < NL && !want_comm(k)) k++;
    if (k >= NL || g.comm[i] != want_comm(k)) bad++;
    k++;
  }
  return bad || g.n != NL - 10 || unsettled != 10 ? -1 : 0;
}

int main(void) {
  int parsed;
  CHECK(run(0, &parsed) == 0 && parsed, "connowner: calls one at a time: each line given to its call's communicator, "
        "10 with none in flight unsettled");
  CHECK(run(1, &parsed) == 0 && parsed, "connowner: calls in runs of 1..37 (ncs_cown_calls): the same answer");
  return check_done();
}
