/* commands.h — the decoder's subcommands: one line each, X(name, function, one-line help).
 * Each function is `int f(int argc, char **argv)` (argv[0] is the subcommand name) and returns
 * the process exit code, one table for every command (docs/CLI.md): */
#ifndef NCS_COMMANDS_H
#define NCS_COMMANDS_H
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
#define NCS_COMMANDS(X) \
  X(report, cmd_report, "per-rank and per-operation summary of traces (--json)") \
  X(jobs, cmd_jobs, "the jobs and attempts (restarts) in a set of traces: jobs [--json] PATH...") \
  X(dump, cmd_dump, "every record of a trace, one line each") \
  X(run, cmd_run, "run a command with the shim preloaded: run [-o DIR] -- CMD...") \
  X(nccl-log, cmd_nccl_log, "transports, versions and rings from NCCL debug logs: nccl-log [--json] FILE...") \
  X(doctor, cmd_doctor, "verdicts: hangs, dead ranks, desyncs, transports, bandwidth: doctor [--json] PATH...") \
  X(watch, cmd_watch, "live table of a running job's ranks, exit 1 on a hang: watch [--hang-after S] DIR") \
  X(timeline, cmd_timeline, "Chrome/Perfetto trace of every call on one clock: timeline PATH... -o FILE.json") \
  X(html, cmd_html, "one self-contained HTML report with charts: html PATH... -o report.html") \
  X(compare, cmd_compare, "CI gate between runs, exit 1 on regression: compare [--json|--markdown] BASE... NEW") \
  X(synth, cmd_synth, "write synthetic traces (tests, benchmarks): synth -o DIR [--ranks N --calls M ...]")

#define NCS_DECLARE_CMD_(name, fn, help) int fn(int argc, char **argv);
NCS_COMMANDS(NCS_DECLARE_CMD_)
#undef NCS_DECLARE_CMD_
#endif
