/* synth_cmd.c — `ncclscope synth`: its options, handed to the generator (io/synth.h). */
#include "io/synth.h"
#include "base/cli.h"
#include "cmd/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pair_arg(const char *s, long *a, double *b) {
  char *e;
  *a = strtol(s, &e, 10);
  if (*e != ':') return -1;
  *b = strtod(e + 1, &e);
  return *e ? -1 : 0;
}

int cmd_synth(int argc, char **argv) {
  struct ncs_synth_cfg c;
  ncs_synth_defaults(&c);
  const char *out = NULL;
  static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'}, {"ranks", required_argument, NULL, 'r'},
    {"hosts", required_argument, NULL, 'H'}, {"calls", required_argument, NULL, 'c'},
    {"seed", required_argument, NULL, 's'}, {"gap-us", required_argument, NULL, 'g'},
    {"jitter-us", required_argument, NULL, 'J'}, {"drift-ppm", required_argument, NULL, 'd'},
    {"ntp-us", required_argument, NULL, 'N'}, {"slow", required_argument, NULL, 'S'},
    {"noise", required_argument, NULL, 'n'}, {"transport", required_argument, NULL, 't'},
    {"host-prefix", required_argument, NULL, 'P'}, {"cmdline", required_argument, NULL, 'L'},
    {"chunk-calls", required_argument, NULL, 'k'}, {"threads", required_argument, NULL, 'T'},
    {"no-gpu", no_argument, NULL, 'G'}, {"host-comms", no_argument, NULL, 'C'},
    {"straggler", required_argument, NULL, 'x'}, {"missing", required_argument, NULL, 'm'},
    {"mismatch", required_argument, NULL, 'M'}, {"slow-host", required_argument, NULL, 'X'}, {0}};
  static const struct ncs_cli cli = {
    "synth",
    "usage: ncclscope synth -o DIR [--ranks N] [--hosts H] [--calls M] [--seed S]\n"
    "  [--gap-us U] [--jitter-us U] [--drift-ppm P] [--ntp-us U] [--straggler R:US[:FRAC]]\n"
    "  [--missing R:SEQ] [--mismatch R:SEQ] [--slow-host H:PCT] [--no-gpu] [--transport P2P|SHM|NET] [--slow PCT]\n"
    "  [--noise PCT] [--host-comms] [--host-prefix S] [--cmdline S] [--chunk-calls N] [--threads N]\n"
    "Writes synthetic traces in the real format, for tests and benchmarks.\n"
    "Exit: 0, 2 bad usage or a directory that cannot be written.\n",
    opts, 0};
  int r;
  while ((r = ncs_cli_next(&cli, argc, argv)) != NCS_CLI_DONE) {
    const char *v = optarg;
    char *e;
    switch (r) {
    case 'o': out = v; break;
    case 'r': c.ranks = atoi(v); break;
    case 'H': c.hosts = atoi(v); break;
    case 'c': c.calls = atol(v); break;
    case 's': c.seed = strtoull(v, NULL, 0); break;
    case 'g': c.gap_us = atof(v); break;
    case 'J': c.jitter_us = atof(v); break;
    case 'd': c.drift_ppm = atof(v); break;
    case 'N': c.ntp_us = atof(v); break;
    case 'S': c.slow_pct = atof(v); break;
    case 'n': c.noise_pct = atof(v); break;
    case 't': c.transport = v; break;
    case 'P': c.host_prefix = v; break;
    case 'L': c.cmdline = v; break;
    case 'k': c.chunk_calls = atoi(v); break;
    case 'T': c.threads = atoi(v); break;
    case 'G': c.gpu = 0; break;
    case 'C': c.host_comms = 1; break;
    case 'x':
      c.straggler = (int)strtol(v, &e, 10);
      if (*e != ':') return ncs_cli_fail(&cli, "--straggler wants R:US[:FRAC], got '%s'", v);
      c.straggler_us = strtod(e + 1, &e);
      c.straggler_frac = *e == ':' ? strtod(e + 1, NULL) : 1.0;
      break;
    case 'X': {
      long hh; double pct;
      if (pair_arg(v, &hh, &pct) || hh < 0 || pct < 0) return ncs_cli_fail(&cli, "--slow-host wants H:PCT, got '%s'", v);
      c.slow_host = (int)hh; c.slow_host_pct = pct;
      break;
    }
    case 'm': case 'M': {
      long rk; double sq;
      if (pair_arg(v, &rk, &sq)) return ncs_cli_fail(&cli, "--%s wants R:SEQ, got '%s'", r == 'm' ? "missing" : "mismatch", v);
      if (r == 'm') { c.missing_rank = (int)rk; c.missing_seq = (long)sq; }
      else { c.mismatch_rank = (int)rk; c.mismatch_seq = (long)sq; }
      break;
    }
    default: return ncs_cli_exit(r);
    }
  }
  if (optind < argc) return ncs_cli_fail(&cli, "unexpected argument '%s'", argv[optind]);
  if (!out) return ncs_cli_fail(&cli, "no output directory: -o DIR");
  if (strcmp(c.transport, "P2P") && strcmp(c.transport, "SHM") && strcmp(c.transport, "NET"))
    return ncs_cli_fail(&cli, "--transport is P2P, SHM or NET, not '%s'", c.transport);
  char err[512];
  if (ncs_synth_write(&c, out, err, sizeof err)) { fprintf(stderr, "ncclscope synth: %s\n", err); return 2; }
  return 0;
}
