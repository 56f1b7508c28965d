/* cli.h — one way every command reads its command line (docs/CLI.md, "Conventions").
 * Options are GNU getopt_long: long names may be abbreviated (--js for --json) and take
 * `--name value` or `--name=value`, options and operands may be mixed (except where a command
 * stops at its first operand, as `run` does). `-h`/`--help` print the command's help on stdout
 * (exit 0). A mistake prints one line naming it, with the nearest option when one is close,
 * then "Try 'ncclscope CMD --help'.", on stderr, before any other output; the command then
 * exits NCS_EXIT_USAGE. */
#ifndef NCS_CLI_H
#define NCS_CLI_H
#include <getopt.h>

/* Exit codes shared by every command: enum ncs_exit (docs/CLI.md). */
#include "base/exit.h"

struct ncs_cli {
  const char *cmd;            /* "doctor" */
  const char *help;           /* the whole help text, first line "usage: ncclscope CMD ..." */
  const struct option *opts;  /* the command's options, {0}-terminated, without help */
  int stop_at_operand;        /* 1: the first operand ends the options (run) */
};

enum { NCS_CLI_DONE = -1, NCS_CLI_HELP = -2, NCS_CLI_BAD = -3 };

/* The next option's `val` (optarg holds its value), or NCS_CLI_DONE when the options are over
 * (optind then indexes the first operand; GNU order puts operands last), NCS_CLI_HELP after
 * printing the help, NCS_CLI_BAD after printing the mistake. A new argv starts afresh. */
int ncs_cli_next(const struct ncs_cli *c, int argc, char **argv);
/* Prints "ncclscope CMD: MESSAGE" and the --help hint on stderr; returns NCS_EXIT_USAGE. */
int ncs_cli_fail(const struct ncs_cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A number option's value: 0, or -1 after ncs_cli_fail naming the option. */
int ncs_cli_double(const struct ncs_cli *c, const char *opt, const char *v, double *out);
int ncs_cli_long(const struct ncs_cli *c, const char *opt, const char *v, long *out);
/* A rank list option's value, "0-3,17,300": a bitmap of ranks [0, *cap) in *bits (malloc'ed);
 * 0, or -1 on a malformed list (nothing allocated). */
int ncs_cli_ranks(const char *s, unsigned char **bits, int *cap);
/* The candidate closest to word by edit distance (at most 1 edit for short words, a third of the
 * length for longer ones), or NULL: the "did you mean" of commands and options. */
const char *ncs_cli_nearest(const char *word, const char *const *cands, int n);
/* Return the exit code for a ncs_cli_next result below NCS_CLI_DONE. */
static inline int ncs_cli_exit(int r) { return r == NCS_CLI_HELP ? NCS_EXIT_OK : NCS_EXIT_USAGE; }
#endif
