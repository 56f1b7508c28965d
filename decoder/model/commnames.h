/* commnames.h — the name a user knows for each communicator of a job: what the job called it
 * (ncclConfig_t's commName, COMM `name`, format 5.4), else its ranks and its parent.
 *
 * Contract: feed every COMM record of every file, either through a loader visitor per file
 * (ncs_commnames_visitor, or ncs_commnames_comm from one's own visitor: files may be read in
 * parallel, per-file state; then
 * ncs_commnames_finish once, one thread, after every file) or one record at a time
 * (ncs_commnames_add, any order, one thread); then ncs_commnames_label(cn, comm_id, buf, n)
 * writes:
 *   - the job's name for it when one was given ("trainer-world");
 *   - a communicator split or shrunk from another: "ranks R of PARENT (split, color C)", R the
 *     ranks of the parent that joined it, as ranges (model/ranks.h), PARENT the parent's label
 *     (so a chain of splits reads from the root);
 *   - any other: "N ranks (INITOP)" — "4 ranks (ncclCommInitRank)" — with " #" and the first 8
 *     hex digits of its id when two such communicators would read the same.
 * A communicator not fed reads "communicator 0123abcd…" (its id). The 64-bit id itself stays in
 * the JSON ("comm_id") and under --detail. Labels are computed on demand; not thread-safe. */
#ifndef NCS_COMMNAMES_H
#define NCS_COMMNAMES_H
#include <stddef.h>
#include <stdint.h>

#include "ncclscope/records.h"

struct ncs_commnames;
struct ncs_visitor;
/* nfiles: the files ncs_commnames_visitor will be given (0 when fed by ncs_commnames_add only). */
struct ncs_commnames *ncs_commnames_new(int nfiles);
void ncs_commnames_visitor(struct ncs_commnames *cn, int file, struct ncs_visitor *v);
/* The same for one COMM record of `file`, for a caller whose own visitor takes COMM records. */
void ncs_commnames_comm(struct ncs_commnames *cn, int file, const struct ncs_comm *c);
/* Every file's communicators, each with that file's rank in its parent; once (later calls do
 * nothing). */
void ncs_commnames_finish(struct ncs_commnames *cn);
/* File `file`'s COMM records as read (a completion replaces its communicator's earlier record),
 * kept until ncs_commnames_free: their count, *out pointing at them; the one of its
 * communicator index `comm`, or NULL. */
size_t ncs_commnames_file(const struct ncs_commnames *cn, int file, const struct ncs_comm **out);
const struct ncs_comm *ncs_commnames_of(const struct ncs_commnames *cn, int file, uint32_t comm);
void ncs_commnames_free(struct ncs_commnames *cn);
/* `rank_in_parent`: the rank this file holds in the parent communicator (parent_id), -1 unknown. */
void ncs_commnames_add(struct ncs_commnames *cn, const struct ncs_comm *c, int rank_in_parent);
const char *ncs_commnames_label(const struct ncs_commnames *cn, uint64_t comm_id, char *buf, size_t n);
/* How text names communicator comm_id: its label, followed by " [ID]" (16 hex digits) when
 * with_id; the id alone when cn is NULL or does not know it (an older reader's output). */
const char *ncs_commnames_text(const struct ncs_commnames *cn, uint64_t comm_id, int with_id, char *buf, size_t n);
/* The job's own name for it ("" when none). */
const char *ncs_commnames_given(const struct ncs_commnames *cn, uint64_t comm_id);
#endif
