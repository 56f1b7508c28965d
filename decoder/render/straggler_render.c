/* straggler_render.c — the straggler engine's result as text and JSON (straggler_render.h). */
#include "render/straggler_render.h"

#include <math.h>
#include <string.h>

#include "ncclscope/ops.h"

/* how communicators are named: by the job's names (with the id too when names_id), else by id */
struct names { const struct ncs_commnames *names; int names_id; };

static const char *opname(uint32_t op) { const char *n = ncs_op_name(op); return n ? n : "?"; }

/* communicator id as the text names it, escaped */
static void comm_text(const struct names *s, FILE *f, uint64_t id) {
  char b[240];
  ncs_commnames_text(s->names, id, s->names_id, b, sizeof b);
  ncs_text_escape(f, b, strlen(b));
}
static void comm_json(const struct names *s, struct ncs_json *j, uint64_t id) {
  if (!s->names) return;
  char b[240];
  ncs_json_str(j, "comm", ncs_commnames_label(s->names, id, b, sizeof b));
}

void ncs_strag_print_text(const struct ncs_strag_result *s, FILE *f, int top, int lists, const struct ncs_commnames *cn,
                          int with_id) {
  if (!s) return;
  const struct names nm = {cn, with_id};
  fprintf(f, "Who is slow (collectives lined up by communicator and sequence number)\n");
  fprintf(f, "  %llu collectives on %d communicator(s) complete", (unsigned long long)s->complete, s->ncomms);
  if (s->incomplete && (!lists || (uint64_t)s->nmissing < s->incomplete)) /* the ones no MISSING line lists */
    fprintf(f, ", %llu entered by only some ranks", (unsigned long long)s->incomplete);
  fprintf(f, "; arrival skew mean %.1f us, max %.1f us", s->skew_mean_us, s->skew_max_us);
  if (s->complete) {
    fputs(" (comm ", f);
    comm_text(&nm, f, s->skew_max_comm);
    fprintf(f, " seq %llu)", (unsigned long long)s->skew_max_seq);
  }
  fprintf(f, "\n");
  if (s->complete && s->nranks) {
    fprintf(f, "  %5s  %-20s %9s %7s %14s %12s\n", "rank", "host", "last", "last%", "wait caused s", "mean late us");
    for (int i = 0; i < s->nranks && i < top; i++) {
      const struct ncs_strag_rank *r = &s->rank[i];
      fprintf(f, "  %5d  ", r->rank);
      size_t hl = strlen(r->host);
      ncs_text_escape(f, r->host, hl > 20 ? 20 : hl);
      fprintf(f, "%*s %9llu %6.1f%% %14.6f %12.1f\n", (int)(21 - (hl > 20 ? 20 : hl)), "",
              (unsigned long long)r->last_count, r->arrivals ? 100.0 * (double)r->last_count / (double)r->arrivals : 0.0,
              r->wait_caused_s, r->mean_late_us);
    }
  }
  for (int i = 0; lists && i < s->nmismatch; i++) {
    const struct ncs_strag_mismatch *m = &s->mismatch[i];
    fputs("  MISMATCH comm ", f);
    comm_text(&nm, f, m->comm_id);
    fprintf(f, " seq %llu: ", (unsigned long long)m->seq);
    if (m->odd > 1) fprintf(f, "%u ranks (the lowest %d)", m->odd, m->rank); else fprintf(f, "rank %d", m->rank);
    fprintf(f, " called %s count %llu dtype %u, the others %s count %llu dtype %u\n", opname(m->got.op),
            (unsigned long long)m->got.count, m->got.dtype, opname(m->want.op), (unsigned long long)m->want.count, m->want.dtype);
  }
  if (lists && s->mismatches > NCS_STRAG_LIST) fprintf(f, "  ... %llu mismatches in all\n", (unsigned long long)s->mismatches);
  for (int i = 0; lists && i < s->nmissing; i++) {
    const struct ncs_strag_missing *m = &s->missing[i];
    fputs("  MISSING comm ", f);
    comm_text(&nm, f, m->comm_id);
    fprintf(f, " seq %llu: %u of %d ranks entered; never entered:", (unsigned long long)m->seq, m->entered, m->nranks);
    for (int k = 0; k < m->never && k < 16; k++) fprintf(f, " %d", m->rank[k]);
    if (m->never > 16) fprintf(f, " ... (%d)", m->never);
    fprintf(f, "  (a hang looks like this)\n");
  }
  if (s->noffsets) {
    double worst = 0;
    for (int i = 0; i < s->noffsets; i++) if (fabs(s->offset[i].offset_us) > worst) worst = fabs(s->offset[i].offset_us);
    fprintf(f, "  clock check (GPU ends of sampled collectives): hosts disagree by up to %.1f us after alignment;"
               " cross-host lateness below that is clock error\n", worst);
  }
  for (int i = 0; i < s->nskipped; i++) {
    const struct ncs_strag_skipped *c = &s->skipped[i];
    if (c->traced < c->nranks) {
      fputs("  communicator ", f);
      comm_text(&nm, f, c->comm_id);
      fprintf(f, " has %d ranks but only %d of them are in the %d trace file(s) given:"
                 " its collectives are not lined up\n", c->nranks, c->traced, s->nfiles);
    } else {
      fputs("  communicator ", f);
      comm_text(&nm, f, c->comm_id);
      fprintf(f, ": rank %d is claimed by more than one trace file (a copy, or a cut"
                 " trace beside the whole one?): its collectives are not lined up\n", c->claimed_twice);
    }
  }
  if (s->given_up)
    fprintf(f, "  %llu open collective(s) given up: ranks were read more than %u collectives apart\n",
            (unsigned long long)s->given_up, s->window_max);
  if (s->oom) fprintf(f, "  warning: out of memory %llu time(s): figures incomplete\n", (unsigned long long)s->oom);
}

static void json_sig(struct ncs_json *j, const char *key, const struct ncs_strag_sig *g) {
  ncs_json_obj_begin(j, key);
  ncs_json_str(j, "op", opname(g->op));
  ncs_json_uint(j, "count", g->count);
  ncs_json_uint(j, "datatype", g->dtype);
  ncs_json_int(j, "root", g->root);
  ncs_json_obj_end(j);
}

void ncs_strag_print_json(const struct ncs_strag_result *s, struct ncs_json *j, const struct ncs_commnames *cn) {
  if (!s) return;
  const struct names nm = {cn, 0};
  char id[24];
  ncs_json_arr_begin(j, "stragglers");
  for (int i = 0; i < s->nranks; i++) {
    const struct ncs_strag_rank *r = &s->rank[i];
    ncs_json_obj_begin(j, NULL);
    ncs_json_int(j, "rank", r->rank);
    ncs_json_str(j, "host", r->host);
    ncs_json_uint(j, "pid", r->pid);
    ncs_json_uint(j, "last_count", r->last_count);
    ncs_json_num(j, "wait_caused_s", r->wait_caused_s);
    ncs_json_uint(j, "collectives", r->arrivals);
    ncs_json_num(j, "last_share", r->arrivals ? (double)r->last_count / (double)r->arrivals : 0);
    ncs_json_num(j, "mean_late_us", r->mean_late_us);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_obj_begin(j, "collectives");
  ncs_json_uint(j, "complete", s->complete);
  ncs_json_uint(j, "incomplete", s->incomplete);
  ncs_json_num(j, "skew_mean_us", s->skew_mean_us);
  ncs_json_num(j, "skew_max_us", s->skew_max_us);
  if (s->complete) {
    snprintf(id, sizeof id, "%016llx", (unsigned long long)s->skew_max_comm);
    ncs_json_str(j, "skew_max_comm", id);
    ncs_json_uint(j, "skew_max_seq", s->skew_max_seq);
  }
  ncs_json_uint(j, "peak_open", s->peak_open);
  ncs_json_uint(j, "given_up", s->given_up);
  ncs_json_int(j, "communicators_partly_traced", s->partial);
  if (s->claimed_twice) ncs_json_int(j, "communicators_rank_claimed_twice", s->claimed_twice);
  ncs_json_obj_end(j);
  ncs_json_arr_begin(j, "clock_check");
  for (int i = 0; i < s->noffsets; i++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "host", s->offset[i].host);
    ncs_json_num(j, "offset_us", s->offset[i].offset_us);
    ncs_json_int(j, "samples", s->offset[i].samples);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_arr_begin(j, "mismatches");
  for (int i = 0; i < s->nmismatch; i++) {
    const struct ncs_strag_mismatch *m = &s->mismatch[i];
    ncs_json_obj_begin(j, NULL);
    snprintf(id, sizeof id, "%016llx", (unsigned long long)m->comm_id);
    ncs_json_str(j, "comm_id", id);
    comm_json(&nm, j, m->comm_id);
    ncs_json_uint(j, "seq", m->seq);
    ncs_json_int(j, "rank", m->rank);
    ncs_json_uint(j, "ranks_odd", m->odd);
    json_sig(j, "got", &m->got);
    json_sig(j, "others", &m->want);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_arr_begin(j, "missing");
  for (int i = 0; i < s->nmissing; i++) {
    const struct ncs_strag_missing *m = &s->missing[i];
    ncs_json_obj_begin(j, NULL);
    snprintf(id, sizeof id, "%016llx", (unsigned long long)m->comm_id);
    ncs_json_str(j, "comm_id", id);
    comm_json(&nm, j, m->comm_id);
    ncs_json_uint(j, "seq", m->seq);
    ncs_json_uint(j, "entered", m->entered);
    ncs_json_int(j, "nranks", m->nranks);
    ncs_json_arr_begin(j, "never_entered");
    for (int k = 0; k < m->never && k < 16; k++) ncs_json_int(j, NULL, m->rank[k]);
    ncs_json_arr_end(j);
    ncs_json_int(j, "never_entered_count", m->never);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
}
