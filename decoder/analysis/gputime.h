/* gputime.h — the GPU-time analysis' figures (decoder/analysis/gputime.c), for the other
 * analyses and doctor: what a rank's GPU did, from its kernel activity. */
#ifndef NCS_GPUTIME_H
#define NCS_GPUTIME_H
#include "model/kact.h"
/* File `file`'s figures in the running report (after all files were read), or NULL when the
 * analysis is not running. fig->have is 0 when the file had no kernel activity. */
const struct ncs_kact_fig *ncs_gputime_fig(int file);
#endif
