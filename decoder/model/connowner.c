/* connowner.c — which communicator each connection line belongs to (contract in connowner.h). */
#include "model/connowner.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CAND 4
#define MAX_PEND 65536
#define MAX_TIDS 64

struct ocomm { uint32_t idx; uint64_t comm_id, handle; int rank, nranks, device; };
struct pend { struct ncs_tconn c; uint64_t t, ptr; uint32_t cand[MAX_CAND]; int ncand; };

struct ncs_cown {
  struct ocomm *comms;
  int ncomms, capcomms;
  struct pend *pend;
  int npend, cappend;
  uint64_t pmin, pmax;          /* time range of the kept lines */
  struct { long tid; uint64_t ptr; } tids[MAX_TIDS]; /* threads inside an init window */
  int ntids;
  uint64_t unsettled;
};

struct ncs_cown *ncs_cown_new(void) { return calloc(1, sizeof(struct ncs_cown)); }

void ncs_cown_free(struct ncs_cown *o) {
  if (!o) return;
  free(o->comms);
  free(o->pend);
  free(o);
}

static struct ocomm *comm_at(struct ncs_cown *o, uint32_t idx) {
  for (int i = 0; i < o->ncomms; i++) if (o->comms[i].idx == idx) return &o->comms[i];
  return NULL;
}

void ncs_cown_comm(struct ncs_cown *o, const struct ncs_comm *c) {
  if (!o || c->nranks < 1) return;
  struct ocomm *m = comm_at(o, c->comm); /* a second record completes a non-blocking init */
  if (!m) {
    if (o->ncomms == o->capcomms) {
      int nc = o->capcomms ? o->capcomms * 2 : 8;
      struct ocomm *p = realloc(o->comms, (size_t)nc * sizeof *p);
      if (!p) return;
      o->comms = p; o->capcomms = nc;
    }
    m = &o->comms[o->ncomms++];
    m->idx = c->comm;
  }
  m->comm_id = c->comm_id; m->handle = c->handle; m->rank = c->rank; m->nranks = c->nranks; m->device = c->device;
}

static int tid_slot(struct ncs_cown *o, long tid) {
  for (int i = 0; i < o->ntids; i++) if (o->tids[i].tid == tid) return i;
  return -1;
}

void ncs_cown_line(struct ncs_cown *o, const struct ncs_nl_rec *r, uint64_t t) {
  if (!o) return;
  if ((r->kind == NCS_NL_INIT || r->kind == NCS_NL_COMMINFO) && r->tid >= 0 && r->u.init.comm_ptr) {
    int k = tid_slot(o, r->tid);
    if (r->kind == NCS_NL_INIT && !r->u.init.start) { /* Init COMPLETE: the window closes */
      if (k >= 0) o->tids[k] = o->tids[--o->ntids];
    } else if (k >= 0) o->tids[k].ptr = r->u.init.comm_ptr;
    else if (o->ntids < MAX_TIDS) { o->tids[o->ntids].tid = r->tid; o->tids[o->ntids++].ptr = r->u.init.comm_ptr; }
    return;
  }
  if (r->kind != NCS_NL_TRANSPORT) return;
  if (o->npend >= MAX_PEND) { o->unsettled++; return; }
  if (o->npend == o->cappend) {
    int nc = o->cappend ? o->cappend * 2 : 64;
    struct pend *p = realloc(o->pend, (size_t)nc * sizeof *p);
    if (!p) { o->unsettled++; return; }
    o->pend = p; o->cappend = nc;
  }
  struct pend *p = &o->pend[o->npend++];
  memset(p, 0, sizeof *p);
  ncs_tconn_of(r, &p->c);
  p->t = t;
  int k = r->tid >= 0 ? tid_slot(o, r->tid) : -1;
  p->ptr = k >= 0 ? o->tids[k].ptr : 0;
  if (o->npend == 1 || t < o->pmin) o->pmin = t;
  if (o->npend == 1 || t > o->pmax) o->pmax = t;
}

/* A call in flight over some kept line's time range: it joins the candidates of the lines it spans. */
__attribute__((noinline)) static void in_flight(struct ncs_cown *o, uint32_t comm, uint64_t t_enter, uint64_t t_exit) {
  for (int i = 0; i < o->npend; i++) {
    struct pend *p = &o->pend[i];
    if (p->t < t_enter || p->t > t_exit) continue;
    int seen = 0;
    for (int k = 0; k < p->ncand; k++) seen |= p->cand[k] == comm;
    if (!seen && p->ncand < MAX_CAND) p->cand[p->ncand++] = comm;
  }
}

void ncs_cown_call(struct ncs_cown *o, uint32_t comm, uint64_t t_enter, uint64_t t_exit) {
  if (!o || !o->npend || !comm || t_exit < o->pmin || t_enter > o->pmax) return;
  in_flight(o, comm, t_enter, t_exit);
}

/* The kept lines' range is the same for the whole run (lines come between runs): tested inline. */
void ncs_cown_calls(struct ncs_cown *o, const struct ncs_call *x, size_t n) {
  if (!o || !o->npend) return;
  uint64_t lo = o->pmin, hi = o->pmax;
  for (size_t i = 0; i < n; i++)
    if (x[i].comm && x[i].t_exit >= lo && x[i].t_enter <= hi) in_flight(o, x[i].comm, x[i].t_enter, x[i].t_exit);
}

/* The line's own rank is m's rank and its peer one of m's ranks. */
static int fits(const struct ocomm *m, const struct ncs_tconn *c) {
  int me = c->dir == NCS_DIR_RECV ? c->to : c->from, peer = c->dir == NCS_DIR_RECV ? c->from : c->to;
  return me == m->rank && peer >= 0 && peer < m->nranks;
}

/* Of the communicators that qualify (rule 1: by handle; 2: the candidates; 3: all), as distinct
 * (comm_id, rank), the one the rules name, or NULL. */
static struct ocomm *pick(struct ncs_cown *o, const struct pend *p, int rule) {
  struct ocomm *fit[16];
  int n = 0, lim = rule == 2 ? p->ncand : o->ncomms;
  for (int k = 0; k < lim && n < 16; k++) {
    struct ocomm *m = rule == 2 ? comm_at(o, p->cand[k]) : &o->comms[k];
    if (!m || !fits(m, &p->c) || (rule == 1 && m->handle != p->ptr)) continue;
    int dup = 0;
    for (int q = 0; q < n && !dup; q++) dup = fit[q]->comm_id == m->comm_id && fit[q]->rank == m->rank;
    if (!dup) fit[n++] = m;
  }
  if (n == 1) return fit[0];
  const char *tag = p->c.dir == NCS_DIR_RECV ? p->c.to_tag : p->c.from_tag;
  if (n < 2 || !tag[0] || strspn(tag, "0123456789") != strlen(tag)) return NULL;
  struct ocomm *got = NULL;
  int k = 0;
  for (int i = 0; i < n; i++) if (fit[i]->device == atoi(tag)) { got = fit[i]; k++; }
  return k == 1 ? got : NULL;
}

uint64_t ncs_cown_settle(struct ncs_cown *o, void (*fn)(void *ctx, uint32_t comm, const struct ncs_tconn *c), void *ctx) {
  if (!o) return 0;
  for (int i = 0; i < o->npend; i++) {
    struct pend *p = &o->pend[i];
    struct ocomm *got = p->ptr ? pick(o, p, 1) : NULL;
    if (!got && p->ncand) got = pick(o, p, 2);
    else if (!got) got = pick(o, p, 3);
    if (!got && o->ncomms == 1) got = &o->comms[0]; /* 4 */
    if (got) fn(ctx, got->idx, &p->c);
    else o->unsettled++;
  }
  free(o->pend);
  o->pend = NULL;
  o->npend = o->cappend = 0;
  uint64_t n = o->unsettled;
  o->unsettled = 0;
  return n;
}
