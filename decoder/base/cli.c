/* cli.c — getopt_long behind one contract for every command (cli.h): help on stdout, mistakes
 * named with a suggestion on stderr before any output, exit 2. Not thread-safe (getopt is not);
 * commands parse their options once, on the main thread. */
#include "base/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 48

int ncs_cli_fail(const struct ncs_cli *c, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ncclscope %s: ", c->cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'ncclscope %s --help'.\n", c->cmd);
  return NCS_EXIT_USAGE;
}

static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return 99;
  int d[65][65];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1; /* transposition */
      d[i][j] = best;
    }
  return d[la][lb];
}

const char *ncs_cli_nearest(const char *word, const char *const *cands, int n) {
  size_t len = strlen(word);
  int limit = len <= 4 ? 1 : (int)(len / 3) < 2 ? 2 : (int)(len / 3);
  const char *best = NULL;
  int bestd = limit + 1;
  for (int i = 0; i < n; i++) {
    int d = edit_distance(word, cands[i]);
    if (d < bestd) { bestd = d; best = cands[i]; }
  }
  return best;
}

static void bad_option(const struct ncs_cli *c, const char *arg, int optc) {
  if (optc && !(arg[0] == '-' && arg[1] == '-')) {
    ncs_cli_fail(c, "unknown option '-%c'", optc);
    return;
  }
  char name[64];
  const char *s = arg + strspn(arg, "-");
  size_t l = strcspn(s, "=");
  snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), s);
  const char *names[MAX_OPTS + 1];
  int n = 0;
  for (const struct option *o = c->opts; o && o->name && n < MAX_OPTS; o++) names[n++] = o->name;
  names[n++] = "help";
  /* a known name here means an ambiguous abbreviation or a value it does not take */
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) { ncs_cli_fail(c, "option '--%s' takes no value", name); return; }
  int prefixes = 0;
  for (int i = 0; i < n; i++) prefixes += !strncmp(names[i], name, strlen(name));
  if (prefixes > 1) { ncs_cli_fail(c, "option '--%s' is ambiguous", name); return; }
  const char *near = ncs_cli_nearest(name, names, n);
  if (near) ncs_cli_fail(c, "unknown option '--%s'; did you mean '--%s'?", name, near);
  else ncs_cli_fail(c, "unknown option '--%s'", name);
}

int ncs_cli_next(const struct ncs_cli *c, int argc, char **argv) {
  static char **seen;
  static struct option longopts[MAX_OPTS + 2];
  static char shortopts[3 * MAX_OPTS + 4];
  if (argv != seen) { /* a new command line: rebuild the tables, restart getopt */
    seen = argv;
    optind = 0;
    int n = 0;
    size_t s = 0;
    if (c->stop_at_operand) shortopts[s++] = '+';
    shortopts[s++] = ':'; /* report a missing value as ':' */
    for (const struct option *o = c->opts; o && o->name && n < MAX_OPTS; o++) {
      longopts[n++] = *o;
      if (o->flag == NULL && o->val > 0 && o->val < 128 && o->val != 'h') {
        shortopts[s++] = (char)o->val;
        if (o->has_arg == required_argument) shortopts[s++] = ':';
      }
    }
    longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n] = (struct option){0};
    shortopts[s++] = 'h';
    shortopts[s] = 0;
  }
  opterr = 0;
  int prev = optind ? optind : 1;
  int r = getopt_long(argc, argv, shortopts, longopts, NULL);
  if (r == -1) { seen = NULL; return NCS_CLI_DONE; }
  if (r == 'h') {
    fputs(c->help, stdout);
    seen = NULL;
    return NCS_CLI_HELP;
  }
  if (r == ':') {
    const char *arg = argv[optind - 1 >= prev ? optind - 1 : prev];
    if (arg[0] == '-' && arg[1] == '-') ncs_cli_fail(c, "option '%s' needs a value", arg);
    else ncs_cli_fail(c, "option '-%c' needs a value", optopt);
    seen = NULL;
    return NCS_CLI_BAD;
  }
  if (r == '?') {
    bad_option(c, argv[optind - 1 >= prev ? optind - 1 : prev], optopt);
    seen = NULL;
    return NCS_CLI_BAD;
  }
  return r;
}

int ncs_cli_double(const struct ncs_cli *c, const char *opt, const char *v, double *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (end == v || *end || errno) { ncs_cli_fail(c, "option '%s': '%s' is not a number", opt, v); return -1; }
  *out = d;
  return 0;
}

int ncs_cli_long(const struct ncs_cli *c, const char *opt, const char *v, long *out) {
  char *end;
  errno = 0;
  long l = strtol(v, &end, 0);
  if (end == v || *end || errno) { ncs_cli_fail(c, "option '%s': '%s' is not an integer", opt, v); return -1; }
  *out = l;
  return 0;
}

int ncs_cli_ranks(const char *s, unsigned char **bits, int *cap) {
  int hi = -1;
  for (const char *p = s; *p;) { /* first pass: the highest rank */
    char *e;
    long a = strtol(p, &e, 10), b = a;
    if (e == p || a < 0 || a > (1 << 24)) return -1;
    if (*e == '-') { p = e + 1; b = strtol(p, &e, 10); if (e == p || b < a || b > (1 << 24)) return -1; }
    if (b > hi) hi = (int)b;
    if (*e && *e != ',') return -1;
    p = *e ? e + 1 : e;
  }
  if (hi < 0 || !(*bits = calloc((size_t)hi + 1, 1))) return -1;
  *cap = hi + 1;
  for (const char *p = s; *p;) {
    char *e;
    long a = strtol(p, &e, 10), b = a;
    if (*e == '-') b = strtol(e + 1, &e, 10);
    for (long k = a; k <= b; k++) (*bits)[k] = 1;
    p = *e ? e + 1 : e;
  }
  return 0;
}
