/* test_profiler_format.c — the PROFILE record body (ncclscope/records.h,
 * docs/FORMAT-TOPO.md): round trip, every truncation decodes without reading past the body
 * (missing trailing fields read as 0 / empty), a cut string or varint is an error, long names
 * are truncated, and extra trailing bytes are ignored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ncclscope/encode.h"

/* One body through the shared reader; q zeroed first so that memcmp sees no stale padding. */
static int dec_profile(const uint8_t *body, size_t len, struct ncs_profile *q) {
  struct ncs_rbuf r;
  memset(q, 0, sizeof *q);
  return ncs_dec_profile(ncs_rbuf_on(&r, body, len), q);
}

int main(void) {
  struct ncs_profile p = {0}, q;
  p.comm_hash = 0xf8381bfbad4674f2ull;
  p.rank = 3;
  p.nranks = 8;
  p.seq = 41;
  strcpy(p.func, "ReduceScatter");
  strcpy(p.algo, "NVLSTree");
  strcpy(p.proto, "LL128");
  p.nchannels = 32;
  p.nwarps = 16;
  p.count = 1ull << 33;
  strcpy(p.datatype, "ncclBfloat16");
  p.root = -1;
  p.t = 123456789012345ull;
  p.dropped = 7;
  p.version = 5;
  uint8_t buf[512];
  struct ncs_wbuf w;
  ncs_wbuf_init(&w, buf, sizeof buf);
  ncs_enc_profile_body(&w, &p);
  CHECK(!w.overflow && w.len > 0, "profile body encodes (%zu bytes)", w.len);
  CHECK(dec_profile(buf, w.len, &q) == 0 && !memcmp(&p, &q, sizeof p), "round trip: every field equal");

  /* every prefix: decodes or reports a cut field; fields before the cut keep their values */
  int bad = 0, errors = 0;
  for (size_t n = 0; n < w.len; n++) {
    uint8_t *cut = malloc(n ? n : 1); /* exact size: a read past it is caught by ASan builds */
    memcpy(cut, buf, n);
    int rc = dec_profile(cut, n, &q);
    if (rc != 0) errors++;
    if (n > 0 && rc == 0 && q.comm_hash != p.comm_hash) bad++;
    free(cut);
  }
  CHECK(bad == 0, "every truncation: fields before the cut decode unchanged");
  CHECK(errors > 0 && errors < (int)w.len, "truncations inside a field are errors (%d of %zu), at field ends not",
        errors, w.len);
  CHECK(dec_profile(buf, 0, &q) == 0 && q.func[0] == 0 && q.version == 0, "empty body: all 0 / empty");

  /* a string whose length runs past the body */
  uint8_t s[] = {1, 2, 3, 4, 200, 'A'};
  CHECK(dec_profile(s, sizeof s, &q) == -1, "string length past the body: error");
  /* a varint that never ends */
  uint8_t v[12];
  memset(v, 0xff, sizeof v);
  CHECK(dec_profile(v, sizeof v, &q) == -1, "unterminated varint: error");

  /* names longer than the field are truncated, NUL-terminated */
  uint8_t lb[256];
  ncs_wbuf_init(&w, lb, sizeof lb);
  ncs_w_varint(&w, 1);
  ncs_w_svarint(&w, 0);
  ncs_w_varint(&w, 2);
  ncs_w_varint(&w, 0);
  ncs_w_str(&w, "AVeryLongCollectiveNameThatDoesNotFit");
  CHECK(dec_profile(lb, w.len, &q) == 0 && strlen(q.func) == NCS_PROF_STR - 1 && !strncmp(q.func, "AVeryLong", 9),
        "long name truncated to %d bytes", NCS_PROF_STR - 1);

  /* extra bytes after the known fields are ignored */
  ncs_wbuf_init(&w, buf, sizeof buf);
  ncs_enc_profile_body(&w, &p);
  ncs_w_varint(&w, 99);
  ncs_w_str(&w, "future");
  CHECK(dec_profile(buf, w.len, &q) == 0 && !memcmp(&p, &q, sizeof p), "trailing future fields ignored");

  /* whole record: type 14 */
  ncs_wbuf_init(&w, buf, sizeof buf);
  ncs_enc_profile(&w, &p);
  CHECK(!w.overflow && buf[0] == NCS_REC_PROFILE, "whole record starts with type 14");
  return check_done();
}
