/* trace_stats.c — what a trace holds, in a form shell tests can check: for each file,
 *   FILE rc=R truncated=T damaged=D final=F chunks=C records=N dropped=X calls=K comms=M
 *        comm_ends=E drop_records=Y pid=P error=TEXT
 *   thread I calls=K max_tcall=M dropped=D      (one line per trace thread index)
 *   op NAME K                                   (CALL records per op)
 * `dropped` is the cumulative count of the last good chunk header; a thread's `dropped` sums
 * its DROP records. Links the decoder's library (ncs_trace_read). Exit 0 always (the
 * outcome is in the output), 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclscope/ops.h"
#include "io/trace.h"

#define MAXT 4096
struct st {
  unsigned long long calls, comms, comm_ends, drop_records, pid;
  unsigned long long tcalls[MAXT], tmax[MAXT], tdrop[MAXT];
  unsigned long long ops[NCS_OP_LIMIT + 1];
};

static int on_process(void *c, const struct ncs_process *p) { ((struct st *)c)->pid = p->pid; return 0; }
static int on_call(void *c, const struct ncs_call *k) {
  struct st *s = c;
  s->calls++;
  unsigned t = k->thread < MAXT ? k->thread : 0;
  s->tcalls[t]++;
  if (k->tcall > s->tmax[t]) s->tmax[t] = k->tcall;
  s->ops[k->op < NCS_OP_LIMIT ? k->op : NCS_OP_LIMIT]++;
  return 0;
}
static int on_comm(void *c, const struct ncs_comm *m) { ((struct st *)c)->comms++; return 0; }
static int on_comm_end(void *c, const struct ncs_comm_end *e) { ((struct st *)c)->comm_ends++; return 0; }
static int on_drop(void *c, const struct ncs_drop *d) {
  struct st *s = c;
  s->drop_records++;
  s->tdrop[d->thread < MAXT ? d->thread : 0] += d->records;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: trace_stats FILE...\n"); return 2; }
  struct st *s = malloc(sizeof *s);
  if (!s) return 2;
  for (int i = 1; i < argc; i++) {
    memset(s, 0, sizeof *s);
    struct ncs_visitor v;
    memset(&v, 0, sizeof v);
    v.ctx = s; v.process = on_process; v.call = on_call; v.comm = on_comm;
    v.comm_end = on_comm_end; v.drop = on_drop;
    struct ncs_read_status r;
    memset(&r, 0, sizeof r);
    int rc = ncs_trace_read(argv[i], &v, &r);
    printf("%s rc=%d truncated=%d damaged=%d final=%d chunks=%llu records=%llu dropped=%llu calls=%llu "
           "comms=%llu comm_ends=%llu drop_records=%llu pid=%llu error=%.*s\n",
           argv[i], rc, r.truncated, r.damaged, r.final_seen, (unsigned long long)r.chunks,
           (unsigned long long)r.records, (unsigned long long)r.dropped_total, s->calls, s->comms,
           s->comm_ends, s->drop_records, s->pid, (int)sizeof r.error, r.error);
    for (unsigned t = 0; t < MAXT; t++)
      if (s->tcalls[t] || s->tdrop[t])
        printf("thread %u calls=%llu max_tcall=%llu dropped=%llu\n", t, s->tcalls[t], s->tmax[t], s->tdrop[t]);
    for (unsigned o = 0; o <= NCS_OP_LIMIT; o++)
      if (s->ops[o]) printf("op %s %llu\n", ncs_op_name(o) ? ncs_op_name(o) : "?", s->ops[o]);
  }
  free(s);
  return 0;
}
