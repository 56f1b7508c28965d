/* exit.h — the process exit codes every command returns, one table for all of them
 * (docs/CLI.md); below io/ so that any room can name them. */
#ifndef NCS_EXIT_H
#define NCS_EXIT_H
enum ncs_exit {
  NCS_EXIT_OK = 0,         /* done; cut traces (a killed process) are normal input, a warning */
  NCS_EXIT_FINDING = 1,    /* doctor: a problem found; compare: a regression; watch: a hang */
  NCS_EXIT_USAGE = 2,      /* bad usage: unknown command or option, missing argument */
  NCS_EXIT_DAMAGED = 3,    /* a trace is damaged (everything before the damage was used) */
  NCS_EXIT_UNREADABLE = 4  /* an input cannot be read (missing, not a trace, unknown major
                              version, no trace found) or an output cannot be written */
};
/* The more serious of two exit codes: unreadable > damaged > finding > ok (usage stands alone). */
static inline int ncs_exit_worse(int a, int b) {
  static const int rank[] = {0, 1, 4, 2, 3};
  if (a < 0 || a > 4) return a;
  if (b < 0 || b > 4) return b;
  return rank[b] > rank[a] ? b : a;
}
/* The exit code for a trace read result (ncs_trace_read: 0 read, 1 damaged, 2 unreadable); a
 * cut trace reads as 0. */
static inline int ncs_exit_of_read(int read_rc) {
  return read_rc == 2 ? NCS_EXIT_UNREADABLE : read_rc == 1 ? NCS_EXIT_DAMAGED : NCS_EXIT_OK;
}
#endif
