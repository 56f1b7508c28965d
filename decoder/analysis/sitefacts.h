/* sitefacts.h — what `doctor` (and `html`) need of call sites and communicator names: per
 * traced process, its call sites and communicators, and which site issued its calls of each
 * operation on each communicator (docs/DOCTOR.md, "Call sites and names").
 *
 * Contract: ncs_sitefacts_new(n) for n trace files; ncs_sitefacts_visitor(sf, file, v) fills a
 * loader visitor for file `file` (files may be read in parallel: per-file state only);
 * ncs_sitefacts_finish(sf) once after the read (one thread) names the job's communicators
 * (model/commnames.h). Then:
 *   ncs_sitefacts_site(sf, comm_id, rank, op, buf, n): where rank `rank` of communicator
 *     comm_id issued its `op` calls on it — the site of its last such call that returned (a call
 *     still in flight has no CALL record: its site is that of the same rank's earlier calls of
 *     the operation there, which the text says) — 0, or -1 when unknown;
 *   ncs_sitefacts_name_comms(sf, line, cap, keep_id): every 16-hex-digit communicator id of a
 *     known communicator in `line` replaced by its name ("trainer-world", "ranks 1,3 of ..."),
 *     or followed by it in parentheses when keep_id (--detail).
 * Memory per file: its communicators, sites and (communicator, op) pairs. */
#ifndef NCS_SITEFACTS_H
#define NCS_SITEFACTS_H
#include <stddef.h>
#include <stdint.h>

#include "io/trace.h"

struct ncs_sitefacts;
struct ncs_sitefacts *ncs_sitefacts_new(int n);
void ncs_sitefacts_visitor(struct ncs_sitefacts *sf, int file, struct ncs_visitor *v);
void ncs_sitefacts_finish(struct ncs_sitefacts *sf);
int ncs_sitefacts_site(struct ncs_sitefacts *sf, uint64_t comm_id, int rank, uint32_t op, char *buf, size_t n);
void ncs_sitefacts_name_comms(const struct ncs_sitefacts *sf, char *line, size_t cap, int keep_id);
/* Names a user knows in doctor's verdicts (docs/DOCTOR.md, "Call sites and names"): calls
 * ncs_sitefacts_finish; a hung, dead-ranked or desynchronised collective's call site becomes the
 * second evidence line, and every communicator id in the evidence and next steps is replaced by
 * its name (followed by it with `detail`). */
struct ncs_doctor;
void ncs_sitefacts_name_verdicts(struct ncs_sitefacts *sf, struct ncs_doctor *d, int detail);
/* The job's name for a communicator (commnames.h's label) into buf. */
const char *ncs_sitefacts_comm(const struct ncs_sitefacts *sf, uint64_t comm_id, char *buf, size_t n);
void ncs_sitefacts_free(struct ncs_sitefacts *sf);
#endif
