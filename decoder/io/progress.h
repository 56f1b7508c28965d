/* progress.h — a progress bar on stderr for long decodes, only when stderr is a terminal.
 *
 * Contract: ncs_progress_begin() enables the bar when stderr is a terminal (isatty) and
 * NCCLSCOPE_PROGRESS is not "0"; piped or redirected output never gets one. Updates are
 * thread-safe, cost one atomic add, and redraw at most ten times a second; ncs_progress_end()
 * draws the final state and ends the line. */
#ifndef NCS_PROGRESS_H
#define NCS_PROGRESS_H
#include <stdint.h>
void ncs_progress_begin(const char *what, uint64_t total_bytes, int nfiles);
void ncs_progress_bytes(uint64_t n);
void ncs_progress_file_done(void);
void ncs_progress_end(void);
#endif
