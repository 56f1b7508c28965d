/* recover.h — what a killed process had recorded but not yet written as a chunk, read back from
 * its rings file (`<trace>.rings`, include/ncclscope/rings.h, docs/FORMAT.md "Rings file").
 *
 * Contract: ncs_rings_recover() reads the rings file next to a cut trace and returns up to two
 * record sequences in the trace's own record encoding, each to be walked like a decompressed
 * chunk (delta state from zero): `chunk` (the writer's chunk buffer, when it was building the
 * chunk the trace lacks) and `rings` (THREAD, CALL and DROP records built from what the
 * threads' rings held past the writer's tail, without the calls already in `chunk`). Nothing
 * is recovered from a rings file that does not belong to the trace (pid and creation time
 * differ) or is damaged; `note` says what was found. Never aborts; reads only. */
#ifndef NCS_RECOVER_H
#define NCS_RECOVER_H

#include <stddef.h>
#include <stdint.h>

struct ncs_recovered {
  uint8_t *chunk, *rings;          /* malloc'ed record sequences (may be NULL) */
  size_t chunk_len, rings_len;
  uint32_t chunk_records, rings_records;
  uint64_t calls;                  /* calls in both (CALL records, and each call of a CALL_RUN) */
  char note[256];                  /* empty when there is no rings file */
};

/* next_chunk: the index of the first chunk the trace lacks. Returns 1 when something was
 * recovered, 0 when nothing (no file, nothing pending, not this trace's), -1 on damage. */
int ncs_rings_recover(const char *trace_path, uint32_t pid, uint64_t created_ns, uint64_t next_chunk,
                      struct ncs_recovered *out);
void ncs_recovered_free(struct ncs_recovered *r);

#endif
