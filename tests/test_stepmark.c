/* test_stepmark.c — the step boundary rule (decoder/model/stepmark.c) on call sequences whose
 * step the test builds itself: a warm-up of calls seen once or twice, then steps of S distinct
 * calls, the step's first call known. The whole sequence (ending at a step's end) and its
 * first records only, cut anywhere inside a step (cut = 1: the rule for a
 * file longer than the records counted), must name the step's first call; a named op its first
 * signature. Also: the old rule without the cut correction names a mid-step call on a cut whose
 * partial step is under half the step (what the correction is for). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/stepmark.h"
#include "ncclscope/ops.h"

enum { S = 10 };
/* call i of the sequence: warm-up calls 0..5 (two of them repeated once), then steps of S calls
 * (step call k: an AllReduce of count 1000 + k, the first an AllGather) */
static struct ncs_call call_at(size_t i) {
  struct ncs_call c;
  memset(&c, 0, sizeof c);
  c.comm = 1;
  c.callsite = 7;
  if (i < 8) { c.op = NCS_OP_Broadcast; c.count = i < 6 ? i + 1 : i - 5; return c; } /* 1..6, then 1, 2 again */
  size_t k = (i - 8) % S;
  c.op = k == 0 ? NCS_OP_AllGather : NCS_OP_AllReduce;
  c.count = 1000 + k;
  return c;
}
/* counts calls [0, n) and chooses; returns 1 and the chosen key */
static int choose(size_t n, int cut, uint32_t named, uint64_t *key) {
  struct ncs_stepsig *sig = calloc(NCS_STEPMARK_SIGS, sizeof *sig);
  uint32_t nsig = 0, op = 0;
  uint64_t timed = 0;
  for (size_t i = 0; i < n; i++) {
    struct ncs_call c = call_at(i);
    if (!ncs_stepmark_timed(c.op)) continue;
    timed++;
    struct ncs_stepsig *g = ncs_stepmark_slot(sig, &nsig, ncs_stepmark_key(&c));
    if (!g) continue;
    if (!g->count) { g->first = timed; g->op = c.op; }
    g->count++;
  }
  int ok = ncs_stepmark_choose(sig, named, cut, key, &op);
  free(sig);
  return ok;
}

int main(void) {
  struct ncs_call first = call_at(8);
  uint64_t want = ncs_stepmark_key(&first), got = 0;
  /* whole files ending at a step's end (a whole file ending inside a step keeps the rule it
   * always had: the majority of the step's calls decides, docs/METRICS.md "Steps") */
  int bad = 0;
  for (size_t steps = 3; steps <= 12; steps++)
    if (!choose(8 + steps * S, 0, 0, &got) || got != want) bad++;
  CHECK(bad == 0, "stepmark: whole sequences of 3..12 steps: the step's first call (%d wrong)", bad);
  /* the first records only, cut at every point of a step */
  int badcut = 0, oldwrong = 0;
  for (size_t steps = 3; steps <= 12; steps++)
    for (size_t p = 0; p < S; p++) {
      size_t n = 8 + steps * S + p;
      if (!choose(n, 1, 0, &got) || got != want) badcut++;
      if (choose(n, 0, 0, &got) && got != want) oldwrong++; /* the rule without the correction */
    }
  CHECK(badcut == 0, "stepmark: cut at each of the %d calls of a step, 3..12 steps counted: the step's first call (%d wrong)", S, badcut);
  CHECK(oldwrong > 0, "stepmark: without the cut rule some of those cuts name a mid-step call (%d of 100)", oldwrong);
  /* a named op: its first signature, cut or not */
  struct ncs_call ar = call_at(9);
  uint64_t want_ar = ncs_stepmark_key(&ar);
  CHECK(choose(8 + 5 * S + 3, 1, NCS_OP_AllReduce, &got) && got == want_ar, "stepmark: --step-op AllReduce names the step's first AllReduce");
  CHECK(ncs_stepmark_op_by_name("ncclAllGather") == NCS_OP_AllGather && ncs_stepmark_op_by_name("AllGather") == NCS_OP_AllGather &&
            ncs_stepmark_op_by_name("Nope") == 0,
        "stepmark: op names with and without the nccl prefix; an unknown one is none");
  /* a single step: no boundary */
  CHECK(!choose(8 + S, 0, 0, &got) || got != want, "stepmark: one step is not a step count");
  return check_done();
}
