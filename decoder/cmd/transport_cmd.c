/* transport_cmd.c — `ncclscope nccl-log [--json] FILE...`: parses NCCL debug logs written
 * without the shim (any NCCL 2.x) into transport records and a rank x rank matrix.
 * Exit: 0 parsed, 2 bad usage, 4 a file that cannot be read or holds no NCCL log line. All
 * files feed one model. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cli.h"
#include "cmd/commands.h"
#include "base/json.h"
#include "model/transport.h"

static const struct option nccl_log_opts[] = {{"json", no_argument, NULL, 'j'}, {0}};
static const struct ncs_cli nccl_log_cli = {
  "nccl-log",
  "usage: ncclscope nccl-log [--json] FILE...\n"
  "Transports, versions and rings from plain NCCL debug logs (NCCL_DEBUG=INFO) of jobs that ran\n"
  "without the shim. FILE may be - for standard input.\n"
  "  -j, --json   JSON instead of the rank x rank transport matrix\n"
  "  -h, --help   this text\n"
  "Exit: 0, 2 bad usage, 4 a file that cannot be read or holds no NCCL log line (nothing is\n"
  "printed then).\n",
  nccl_log_opts, 0};

int cmd_nccl_log(int argc, char **argv) {
  int json = 0, r;
  while ((r = ncs_cli_next(&nccl_log_cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == 'j') json = 1;
    else return ncs_cli_exit(r);
  }
  if (optind >= argc) return ncs_cli_fail(&nccl_log_cli, "no FILE given");
  /* every file is read before anything is printed: an error leaves no half report */
  struct ncs_tmodel m;
  ncs_tmodel_init(&m);
  for (int i = optind; i < argc; i++) {
    long before = m.lines_nccl, lines = m.lines;
    if (ncs_tmodel_file(&m, argv[i]) != 0) {
      fprintf(stderr, "ncclscope nccl-log: %s: %s\n", argv[i], strerror(errno));
      ncs_tmodel_free(&m);
      return NCS_EXIT_UNREADABLE;
    }
    if (m.lines_nccl == before) { /* not a log of NCCL's: an empty matrix would read as "no connection" */
      fprintf(stderr, "ncclscope nccl-log: %s: no NCCL log line in it (%ld line%s read; expected the output of a job run "
                      "with NCCL_DEBUG=INFO: lines \"host:pid:tid [dev] NCCL INFO ...\")\n",
              argv[i], m.lines - lines, m.lines - lines == 1 ? "" : "s");
      ncs_tmodel_free(&m);
      return NCS_EXIT_UNREADABLE;
    }
  }
  int rc = 0;
  if (json) {
    struct ncs_json j;
    ncs_json_init(&j, stdout, 1);
    ncs_json_obj_begin(&j, NULL);
    ncs_json_int(&j, "version", 1);
    ncs_tmodel_json(&m, &j);
    ncs_json_obj_end(&j);
    ncs_json_done(&j);
  } else {
    ncs_tmodel_text(&m, stdout);
  }
  ncs_tmodel_free(&m);
  return rc;
}
