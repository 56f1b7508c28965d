/* seqsigs.h — one communicator's collective signatures, one per sequence number, in memory that
 * grows with the distinct signatures and the distinct blocks of them, not with the calls.
 *
 * Contract: zero a struct ncs_seqsigs, then ncs_seqsigs_put(seq, sig) for each collective seen:
 * the first signature put for a seq is kept, and a later put of that seq returns the kept one
 * (the caller compares). Signatures are kept as 16-bit ids into a dictionary of the distinct
 * (op, count, datatype, root, rank) values, in blocks of 4096 seqs; a block whose every seq is
 * set never changes again and is shared with every identical full block (a training loop's
 * calls repeat), so a periodic job costs a few blocks whatever its length. Memory: 16 bytes per
 * 4096 seqs up to the highest seq, 8 KiB per distinct full block or block not yet full, 24 bytes
 * per distinct signature. Past 65535 distinct signatures, or out of memory, a new signature is
 * not kept (put returns NULL: that seq is not checked). Not thread-safe (the caller locks). */
#ifndef NCS_SEQSIGS_H
#define NCS_SEQSIGS_H
#include <stddef.h>
#include <stdint.h>

struct ncs_seqsig { uint64_t count; int32_t root; uint8_t op, dtype; int32_t rank; };

struct ncs_seqsigs {
  struct ncs_seqsig *dict;     /* [ndict]: id i + 1 is dict[i] */
  uint32_t ndict, capdict;
  uint16_t *dhash;             /* [dhcap] ids by signature hash, 0 empty */
  uint32_t dhcap;
  uint16_t **blk;              /* [nblk] seqs [i * 4096, (i + 1) * 4096), NULL none set */
  uint16_t *nset;              /* [nblk] seqs set in the block; NCS_SEQSIGS_BLK: shared, in pool */
  size_t nblk;
  uint16_t **pool;             /* [pcap] full blocks by content hash, NULL empty */
  size_t npool, pcap;
  uint16_t last_id;            /* the last id put: consecutive collectives often repeat */
};
#define NCS_SEQSIGS_BLK 4096
#define NCS_SEQSIGS_MAX (1ull << 32) /* seqs from here on are not kept (put returns NULL) */

/* The signature kept for seq before this call, or NULL when none was (s is kept then). */
const struct ncs_seqsig *ncs_seqsigs_put(struct ncs_seqsigs *t, uint64_t seq, const struct ncs_seqsig *s);
void ncs_seqsigs_free(struct ncs_seqsigs *t);
#endif
