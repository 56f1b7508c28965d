/* transport_cmd.c — `ncclscope nccl-log [--json] FILE...`: parses NCCL debug logs written
 * without the shim (any NCCL 2.x) into transport records and a rank x rank matrix.
 * Exit: 0 parsed, 2 bad usage or a file that cannot be read. All files feed one model. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"
#include "render/json.h"
#include "model/transport.h"

static void usage(FILE *f) {
  fprintf(f, "usage: ncclscope nccl-log [--json] FILE...   (FILE may be - for stdin)\n");
}

int cmd_nccl_log(int argc, char **argv) {
  int json = 0, nfiles = 0, rc = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
    else if (argv[i][0] == '-' && argv[i][1]) { fprintf(stderr, "ncclscope nccl-log: unknown option %s\n", argv[i]); usage(stderr); return 2; }
    else nfiles++;
  }
  if (!nfiles) { usage(stderr); return 2; }
  struct ncs_tmodel m;
  ncs_tmodel_init(&m);
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1]) continue;
    if (ncs_tmodel_file(&m, argv[i]) != 0) {
      fprintf(stderr, "ncclscope nccl-log: %s: %s\n", argv[i], strerror(errno));
      rc = 2;
    }
  }
  if (json) {
    struct ncs_json j;
    ncs_json_init(&j, stdout, 1);
    ncs_json_obj_begin(&j, NULL);
    ncs_tmodel_json(&m, &j);
    ncs_json_obj_end(&j);
    ncs_json_done(&j);
  } else {
    ncs_tmodel_text(&m, stdout);
  }
  ncs_tmodel_free(&m);
  return rc;
}
