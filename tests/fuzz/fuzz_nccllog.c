/* fuzz_nccllog.c — libFuzzer entry point for the NCCL debug-log parser (decoder/io/nccllog.h).
 *
 * Contract: splits the input into lines at '\n' and parses each with ncs_nl_parse(), passing
 * a heap copy of exactly the line's bytes (no NUL after it) so a read past the line shows up
 * under ASan. Checks the parser's contract on every line: the returned kind equals out->kind
 * and is a known kind, msg (when set) points inside the line, and every string field of the
 * record is NUL-terminated within its buffer. Built like fuzz_trace.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/nccllog.h"

#define REQUIRE(c) do { if (!(c)) { fprintf(stderr, "fuzz_nccllog: %s failed\n", #c); abort(); } } while (0)
#define TERMINATED(a) (memchr((a), 0, sizeof(a)) != NULL)

static void check_line(const char *line, size_t len) {
  char *copy = malloc(len ? len : 1);
  if (!copy) return;
  memcpy(copy, line, len);
  struct ncs_nl_rec r;
  memset(&r, 0xa5, sizeof r); /* the parser must fill what it reports */
  int kind = ncs_nl_parse(copy, len, &r);
  REQUIRE(kind == r.kind);
  REQUIRE(kind >= NCS_NL_NONE && kind <= NCS_NL_WARN);
  REQUIRE(TERMINATED(r.host));
  if (r.msg) REQUIRE(r.msg >= copy && r.msg + r.msg_len <= copy + len);
  switch (kind) {
  case NCS_NL_TRANSPORT:
    REQUIRE(TERMINATED(r.u.t.from_tag) && TERMINATED(r.u.t.to_tag));
    REQUIRE(TERMINATED(r.u.t.detail) && TERMINATED(r.u.t.mode));
    REQUIRE(ncs_tclass_name(r.u.t.tclass) != NULL);
    break;
  case NCS_NL_VERSION:
    REQUIRE(TERMINATED(r.u.version.text));
    (void)ncs_nl_version_code(r.u.version.text);
    break;
  case NCS_NL_INIT: case NCS_NL_COMMINFO:
    REQUIRE(TERMINATED(r.u.init.bus_id) && TERMINATED(r.u.init.api));
    break;
  case NCS_NL_RING:
    REQUIRE(r.u.ring.nranks_listed >= 0 && r.u.ring.nranks_listed <= NCS_NL_MAX_RING);
    break;
  case NCS_NL_TREE: REQUIRE(TERMINATED(r.u.tree.text)); break;
  case NCS_NL_COLL: REQUIRE(TERMINATED(r.u.coll.op)); break;
  case NCS_NL_NETUSE: REQUIRE(TERMINATED(r.u.netuse.name)); break;
  case NCS_NL_WARN: REQUIRE(TERMINATED(r.u.warn.where) && TERMINATED(r.u.warn.text)); break;
  default: break;
  }
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *p = (const char *)data, *end = p + size;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    check_line(p, len);
    p += len + (nl ? 1 : 0);
  }
  /* also the whole input as one line, newlines and all */
  if (size < 4096) check_line((const char *)data, size);
  return 0;
}
