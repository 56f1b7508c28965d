/* commands.h — the decoder's subcommands: one line each, X(name, function, one-line help).
 * Each function is `int f(int argc, char **argv)` (argv[0] is the subcommand name) and returns
 * the process exit code, one table for every command (base/exit.h, docs/CLI.md). */
#ifndef NCS_COMMANDS_H
#define NCS_COMMANDS_H
#include "base/exit.h"
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
