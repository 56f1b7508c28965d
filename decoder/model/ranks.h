/* ranks.h — a set of ranks, and the one way a verdict writes many ranks: as ranges
 * ("3-450,452,460-462"), so 4,096 ranks take one line, never a line each.
 *
 * Contract: a zeroed struct ncs_ranks is empty. ncs_ranks_add() appends a rank (the array
 * grows; returns -1 when out of memory, the set unchanged); ncs_ranks_sort() sorts and drops
 * duplicates (call it before formatting). ncs_ranks_format() writes the sorted set into buf as
 * ranges: the whole set when it fits, else as many leading ranges as fit followed by
 * " ... +K more"; always NUL-terminated; returns K, the ranks left out (0: the whole set).
 * The set owns its array: ncs_ranks_free(). Negative ranks (unknown) are kept and written "?". */
#ifndef NCS_RANKS_H
#define NCS_RANKS_H
#include <stddef.h>

struct ncs_ranks { int *r; int n, cap; };

int ncs_ranks_add(struct ncs_ranks *s, int rank);
void ncs_ranks_sort(struct ncs_ranks *s);
int ncs_ranks_has(const struct ncs_ranks *s, int rank); /* sorted set: binary search */
int ncs_ranks_format(const struct ncs_ranks *s, char *buf, size_t cap);
/* Ranges of a sorted, duplicate-free array (the same text as ncs_ranks_format). */
int ncs_ranks_format_array(const int *r, int n, char *buf, size_t cap);
void ncs_ranks_free(struct ncs_ranks *s);
#endif
