/* commands.h — the decoder's subcommands: one line each, X(name, function, one-line help).
 * Each function is `int f(int argc, char **argv)` (argv[0] is the subcommand name) and returns
 * the process exit code: 0 ok, 1 a finding (doctor/compare) or damaged input, 2 bad usage or
 * unreadable input. */
#ifndef NCS_COMMANDS_H
#define NCS_COMMANDS_H
#define NCS_COMMANDS(X) \
  X(report, cmd_report, "per-rank and per-operation summary of traces (--json)") \
  X(dump, cmd_dump, "every record of a trace, one line each") \
  X(run, cmd_run, "run a command with the shim preloaded: run [-o DIR] -- CMD...")

#define NCS_DECLARE_CMD_(name, fn, help) int fn(int argc, char **argv);
NCS_COMMANDS(NCS_DECLARE_CMD_)
#undef NCS_DECLARE_CMD_
#endif
