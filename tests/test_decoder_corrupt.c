/* test_decoder_corrupt.c — damaged and truncated traces through the reader (decoder/io/trace.c):
 * cut at every byte (chunk boundaries and mid-chunk), every byte flipped, crafted bad sizes,
 * bad compression, bad record framing, huge counts, and randomly mutated record bytes behind a
 * valid checksum. Each must give the right return code, a message "FILE: offset N: ..." with
 * the damaged chunk's offset, every record before the damage, and never a crash or hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_trace_writer.h"
#include "io/trace.h"

static char dir[] = "/tmp/ncs-corrupt.XXXXXX";
static char path[600];

static uint8_t *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  uint8_t *b = malloc(1 << 20);
  *n = fread(b, 1, 1 << 20, f);
  fclose(f);
  return b;
}
static void spit(const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(b, 1, n, f);
  fclose(f);
}
static int count_cb(void *c, const struct ncs_call *x) { (*(uint64_t *)c)++; return 0; }
static int read_it(uint64_t *calls, struct ncs_read_status *st) {
  struct ncs_visitor v = {0};
  *calls = 0;
  v.ctx = calls;
  v.call = count_cb;
  return ncs_trace_read(path, &v, st);
}
/* "PATH: offset N:" at the start of the message */
static int names(const struct ncs_read_status *st, uint64_t off) {
  char want[700];
  snprintf(want, sizeof want, "%s: offset %llu: ", path, (unsigned long long)off);
  return strncmp(st->error, want, strlen(want)) == 0;
}

struct chunkpos { size_t off, end; uint64_t calls_before; };

int main(void) {
  if (!mkdtemp(dir)) { printf("FAIL: mkdtemp\n"); return 1; }
  snprintf(path, sizeof path, "%s/t.ncs", dir);
  char good[600];
  snprintf(good, sizeof good, "%s/good.ncs", dir);
  tw_golden_rank(good, 0, 1);
  size_t n = 0;
  uint8_t *orig = slurp(good, &n);
  /* chunk layout of the good file and calls per chunk (6, 9, 4 by construction) */
  struct chunkpos ch[8];
  int nch = 0;
  static const uint64_t calls_in[] = {6, 9, 4};
  uint64_t before = 0;
  for (size_t off = 64; off < n && nch < 8; nch++) {
    ch[nch].off = off;
    ch[nch].end = off + 40 + ncs_get_u32(orig + off + 4);
    ch[nch].calls_before = before;
    before += calls_in[nch < 3 ? nch : 2];
    off = ch[nch].end;
  }
  CHECK(nch == 3 && ch[2].end == n, "golden trace has 3 chunks (%d)", nch);

  /* 1. cut at every length */
  int bad_rc = 0, bad_msg = 0, bad_calls = 0;
  for (size_t len = 0; len < n; len++) {
    spit(orig, len);
    uint64_t calls;
    struct ncs_read_status st;
    int rc = read_it(&calls, &st);
    if (len < 64) { if (rc != 2) bad_rc++; if (!names(&st, 0) && strstr(st.error, path) != st.error) bad_msg++; continue; }
    int k = 0; /* chunk the cut falls in (or the next one at a boundary) */
    while (k < nch && ch[k].end <= len) k++;
    size_t off = k < nch ? ch[k].off : n;
    if (rc != 0 || !st.truncated || st.damaged) bad_rc++;
    if (!names(&st, off)) bad_msg++;
    if (calls != (k < nch ? ch[k].calls_before : 19)) bad_calls++;
  }
  CHECK(bad_rc == 0, "cut at each of %zu lengths: rc 2 before the header ends, else truncated (%d wrong)", n, bad_rc);
  CHECK(bad_msg == 0, "cut: message names the file and the offset of the cut chunk (%d wrong)", bad_msg);
  CHECK(bad_calls == 0, "cut: every call of the complete chunks before the cut is delivered (%d wrong)", bad_calls);

  /* 2. flip every byte */
  int flip_bad = 0, flip_msg = 0;
  uint8_t *b = malloc(n);
  for (size_t i = 0; i < n; i++) {
    memcpy(b, orig, n);
    b[i] ^= 0x5a;
    spit(b, n);
    uint64_t calls;
    struct ncs_read_status st;
    int rc = read_it(&calls, &st);
    if (i < 64) {
      int harmless = (i >= 10 && i < 12) || (i >= 16 && i < 64 && !(i >= 12 && i < 16));
      if (i < 8 || (i >= 8 && i < 10)) { if (rc != 2) flip_bad++; }
      else if (i >= 12 && i < 16) { if (rc == 0 && !st.truncated) flip_bad++; }
      else if (harmless && rc != 0) flip_bad++;
      continue;
    }
    int k = 0;
    while (k < nch && ch[k].end <= i) k++;
    size_t rel = i - ch[k].off;
    if (rel >= 36 && rel < 40) { /* the flags word is outside the checksum: only FINAL matters */
      if (rc != 0) flip_bad++;
      continue;
    }
    if (rel >= 4 && rel < 8 && rc == 0 && st.truncated) {
      /* a payload size pointing past the end of the file reads as a cut file: also located */
      if (!names(&st, ch[k].off) || calls != ch[k].calls_before) flip_bad++;
      continue;
    }
    if (rc != 1 || !st.damaged) { flip_bad++; printf("  flip %zu (chunk %d +%zu): rc %d %s\n", i, k, rel, rc, st.error); }
    if (!names(&st, ch[k].off)) flip_msg++;
    else if (calls != ch[k].calls_before) { flip_bad++; printf("  flip %zu: %llu calls\n", i, (unsigned long long)calls); }
  }
  CHECK(flip_bad == 0, "flip each of %zu bytes: damage found in the right chunk, calls before it kept (%d wrong)", n, flip_bad);
  CHECK(flip_msg == 0, "flip: message names the file and the damaged chunk's offset (%d wrong)", flip_msg);

  /* 3. crafted chunk headers (checksum recomputed so the named check is the one that fires) */
  struct ncs_read_status st;
  uint64_t calls;
  memcpy(b, orig, n);
  ncs_put_u32(b + ch[1].off + 4, 0xffffffffu);
  spit(b, n);
  CHECK(read_it(&calls, &st) == 1 && strstr(st.error, "out of limits") && names(&st, ch[1].off) && calls == 6,
        "payload size 4 GiB: refused as over the limit (%s)", st.error);
  memcpy(b, orig, n);
  ncs_put_u32(b + ch[1].off + 8, 70u << 20);
  spit(b, n);
  CHECK(read_it(&calls, &st) == 1 && strstr(st.error, "out of limits"), "raw size 70 MiB: refused (%s)", st.error);
  /* raw size off by one, checksum fixed: the zstd frame content size disagrees */
  memcpy(b, orig, n);
  size_t o = ch[0].off;
  uint32_t psz = ncs_get_u32(b + o + 4);
  ncs_put_u32(b + o + 8, ncs_get_u32(b + o + 8) + 1);
  ncs_put_u32(b + o + 32, ncs_chunk_sum(NCS_FORMAT_MAJOR, b + o, b + o + 40, psz));
  spit(b, n);
  CHECK(read_it(&calls, &st) == 1 && strstr(st.error, "header states") && names(&st, 64) && calls == 0,
        "raw size disagrees with the zstd frame: damage (%s)", st.error);
  /* garbage payload with a valid checksum */
  memcpy(b, orig, n);
  for (uint32_t i = 0; i < psz; i++) b[o + 40 + i] = (uint8_t)(i * 37 + 11);
  ncs_put_u32(b + o + 32, ncs_chunk_sum(NCS_FORMAT_MAJOR, b + o, b + o + 40, psz));
  spit(b, n);
  CHECK(read_it(&calls, &st) == 1 && strstr(st.error, "zstd") && names(&st, 64), "garbage compressed payload behind a valid checksum: damage (%s)", st.error);
  /* the checksum follows the file's major version (docs/FORMAT.md): FNV-1a before 4.0, the lanes
   * since; a 5.0 chunk summed the old way, or a 3.x file summed the new way, is damage */
  memcpy(b, orig, n);
  ncs_put_u32(b + o + 32, ncs_chunk_sum(3, b + o, b + o + 40, psz));
  spit(b, n);
  CHECK(ncs_get_u16(orig + 8) == 5 && read_it(&calls, &st) == 1 && strstr(st.error, "bad checksum") && names(&st, 64) &&
            calls == 0,
        "a 5.0 chunk with a 3.x (FNV-1a) checksum: damage at chunk 0 (%s)", st.error);
  memcpy(b, orig, n);
  ncs_put_u16(b + 8, 3);
  spit(b, n);
  CHECK(read_it(&calls, &st) == 1 && strstr(st.error, "bad checksum") && names(&st, 64) && calls == 0,
        "a 3.x file whose chunks carry 4.0+ (lanes) checksums: damage at chunk 0 (%s)", st.error);
  for (int k = 0; k < nch; k++)
    ncs_put_u32(b + ch[k].off + 32, ncs_chunk_sum(3, b + ch[k].off, b + ch[k].off + 40, ncs_get_u32(b + ch[k].off + 4)));
  spit(b, n);
  int rc3 = read_it(&calls, &st);
  CHECK(rc3 == 0 && calls == 19, "the same chunks as a 3.x file with FNV-1a checksums: all 19 calls read (rc %d, %llu calls%s%s)",
        rc3, (unsigned long long)calls, rc3 ? ": " : "", rc3 ? st.error : "");
  /* bad chunk magic in chunk 2 */
  memcpy(b, orig, n);
  memcpy(b + ch[2].off, "XXXX", 4);
  spit(b, n);
  CHECK(read_it(&calls, &st) == 1 && strstr(st.error, "magic") && names(&st, ch[2].off) && calls == 15,
        "bad chunk magic in chunk 2: damage, 15 calls before it delivered (%s)", st.error);
  /* unknown major version; not a trace */
  memcpy(b, orig, n);
  ncs_put_u16(b + 8, NCS_FORMAT_MAJOR + 1);
  spit(b, n);
  char want[32];
  snprintf(want, sizeof want, "format version %u.", NCS_FORMAT_MAJOR + 1);
  CHECK(read_it(&calls, &st) == 2 && strstr(st.error, want), "the next major version refused (%s)", st.error);
  spit((const uint8_t *)"hello world, not a trace at all. hello world, not a trace at all.", 64);
  CHECK(read_it(&calls, &st) == 2 && strstr(st.error, "not an ncclscope trace"), "non-trace refused (%s)", st.error);
  unlink(path);
  CHECK(read_it(&calls, &st) == 2 && strstr(st.error, "cannot open"), "missing file: rc 2 (%s)", st.error);

  /* 4. record framing inside a good chunk */
  struct { const char *name; uint8_t bytes[24]; size_t len; uint32_t nrec; const char *want; } cases[] = {
    {"record length past the chunk end", {NCS_REC_CALL, 100, 1, 2}, 4, 1, "runs past"},
    {"record header cut", {NCS_REC_CALL}, 1, 1, "bad record header"},
    {"fewer records than the header states", {NCS_REC_CLOCK, 3, 1, 2, 3}, 5, 2, "header states"},
    {"more records than the header states", {NCS_REC_CLOCK, 3, 1, 2, 3, NCS_REC_CLOCK, 3, 1, 2, 3}, 10, 1, "more records"},
    {"CALL varint runs past its body", {NCS_REC_CALL, 2, 24, 0x80}, 4, 1, "malformed"},
    {"CALLSITE with 2^60 frames", {NCS_REC_CALLSITE, 10, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10}, 12, 1, "malformed"},
    {"PROCESS with 2^60 pairs", {NCS_REC_PROCESS, 9, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10}, 11, 1, "malformed"},
    {"THREAD name longer than its body", {NCS_REC_THREAD, 4, 1, 1, 50, 'a'}, 6, 1, "malformed"},
    {"COMM with a cut u64", {NCS_REC_COMM, 4, 1, 1, 2, 3}, 6, 1, "malformed"},
    {"11-byte record type", {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0}, 12, 1, "bad record header"},
    /* 5.0: a CALL_RUN's calls are the chunk's last CALL with other times; none before it, or a
     * pair cut short, is damage (the CALL below is op 1 on thread 1, every field given) */
    {"CALL_RUN with no CALL before it in its chunk", {NCS_REC_CALL_RUN, 2, 2, 4}, 4, 1, "(type 20) at raw byte 0: malformed"},
    {"CALL_RUN with no call in it",
     {NCS_REC_CALL, 17, 1, 1, 2, 0, 2, 0, 0, 0, 1, 0, 20, 6, 0, 0, 0, 0, 0, NCS_REC_CALL_RUN, 0}, 21, 2,
     "(type 20) at raw byte 19: malformed"},
    {"CALL_RUN with a pair cut short",
     {NCS_REC_CALL, 17, 1, 1, 2, 0, 2, 0, 0, 0, 1, 0, 20, 6, 0, 0, 0, 0, 0, NCS_REC_CALL_RUN, 3, 2, 4, 2}, 24, 2,
     "(type 20) at raw byte 19: malformed"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct tw t;
    tw_open(&t, path, 1, 1);
    struct ncs_clock ck = {1, 2, 3};
    tw_clock(&t, &ck);
    tw_flush(&t, 0);
    fflush(t.f);
    uint64_t off1 = (uint64_t)ftell(t.f);
    ncs_w_bytes(&t.w, cases[i].bytes, cases[i].len);
    t.nrec = cases[i].nrec;
    tw_close(&t, 1);
    int rc = read_it(&calls, &st);
    CHECK(rc == 1 && strstr(st.error, cases[i].want) && names(&st, off1) && st.chunks == 1,
          "%s: damage in chunk 1 (%s)", cases[i].name, st.error);
  }
  /* a huge count is data, not damage */
  {
    struct tw t;
    tw_open(&t, path, 1, 1);
    struct ncs_call c = {.op = NCS_OP_AllReduce, .count = UINT64_MAX, .datatype = 7, .t_enter = UINT64_MAX, .t_exit = 0};
    tw_call(&t, &c);
    tw_close(&t, 1);
    CHECK(read_it(&calls, &st) == 0 && calls == 1, "CALL with count 2^64-1 and t_exit < t_enter reads (no overflow trap)");
  }

  /* 5. random mutations of the decompressed records, recompressed with a valid checksum */
  int crashes_avoided = 0, wrong = 0;
  uint64_t seed = 12345;
  struct tw t0;
  char rawp[600];
  snprintf(rawp, sizeof rawp, "%s/raw.ncs", dir);
  tw_open(&t0, rawp, 1, 1);
  {
    /* the records of the golden rank, as one raw buffer */
    tw_close(&t0, 0);
  }
  uint8_t *raw = malloc(1 << 16);
  size_t rawn = 0;
  {
    /* rebuild chunk 1 of the golden file's raw bytes via the reader-independent writer */
    struct tw t;
    tw_open(&t, rawp, 1, 1);
    struct ncs_kv kv[] = {{"host", "h", 1}, {"cmdline", "a\0b", 3}};
    tw_kv(&t, kv, 2);
    struct ncs_frame fr[2] = {{1, 2, 3, "f"}, {4, 5, 6, "g"}};
    struct ncs_callsite cs = {9, 2, fr};
    tw_callsite(&t, &cs);
    struct ncs_thread th = {1, 2, "t", 0};
    tw_thread(&t, &th);
    for (int i = 0; i < 20; i++) {
      struct ncs_call c = {.op = NCS_OP_AllReduce, .thread = 1, .tcall = (uint64_t)i, .count = 1000u * (unsigned)i, .datatype = 7};
      tw_call(&t, &c);
      struct ncs_gpu_time g = {0, 1, 0, (uint64_t)i, 5, 9};
      tw_gpu_time(&t, &g);
    }
    memcpy(raw, t.raw, t.w.len);
    rawn = t.w.len;
    tw_close(&t, 0);
  }
  uint8_t *mut = malloc(rawn + 64);
  for (int it = 0; it < 1500; it++) {
    memcpy(mut, raw, rawn);
    size_t mn = rawn;
    int edits = 1 + (int)((seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 61);
    for (int e = 0; e < edits; e++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      size_t pos = (size_t)((seed >> 20) % mn);
      switch ((seed >> 8) & 3) {
      case 0: mut[pos] ^= (uint8_t)(1u << ((seed >> 4) & 7)); break;
      case 1: mut[pos] = 0xff; break;
      case 2: mut[pos] = (uint8_t)(seed >> 40); break;
      case 3: mn = pos + 1; break; /* cut the records */
      }
    }
    struct tw t;
    tw_open(&t, path, 1, 1);
    ncs_w_bytes(&t.w, mut, mn);
    t.nrec = 61;
    tw_close(&t, 1);
    int rc = read_it(&calls, &st);
    if (rc != 0 && rc != 1) wrong++;
    if (rc == 1 && !names(&st, 64)) wrong++;
    crashes_avoided++;
  }
  CHECK(wrong == 0 && crashes_avoided == 1500, "1500 random record mutations behind valid checksums: rc 0 or 1 with a located message (%d wrong)", wrong);
  /* a column chunk of 4000 CALL records (over 64 KiB of rows: columns; read a block at a time)
   * whose header states 1000 or 5000 records, checksum fixed: damage named at the chunk,
   * exactly the 1000 stated delivered */
  {
    struct tw t;
    tw_open(&t, path, 1, 1);
    for (int i = 0; i < 4000; i++) {
      struct ncs_call c = {.op = 1, .thread = 1, .tcall = (uint64_t)i + 1, .comm = 1, .seq = (uint64_t)i + 1,
                           .count = 1024, .t_enter = 1000000 + (uint64_t)i * 977, .t_exit = 1000500 + (uint64_t)i * 977};
      tw_call(&t, &c);
    }
    tw_close(&t, 1);
    size_t cn;
    uint8_t *cb = slurp(path, &cn);
    uint32_t cflags = cb ? ncs_get_u32(cb + 64 + 36) : 0, cpsz = cb ? ncs_get_u32(cb + 64 + 4) : 0;
    CHECK(cb && (cflags & NCS_CHUNK_F_COLUMNS) && ncs_get_u32(cb + 64 + 12) == 4000, "a column chunk of 4000 calls written");
    static const struct { uint32_t nrec; const char *want; uint64_t calls; } hc[] = {
        {1000, "more records than the 1000 its header states", 1000}, {5000, "4000 records, its header states 5000", 4000}};
    for (int i = 0; cb && i < 2; i++) {
      ncs_put_u32(cb + 64 + 12, hc[i].nrec);
      ncs_put_u32(cb + 64 + 32, ncs_chunk_sum(NCS_FORMAT_MAJOR, cb + 64, cb + 64 + 40, cpsz));
      spit(cb, cn);
      CHECK(read_it(&calls, &st) == 1 && strstr(st.error, hc[i].want) && names(&st, 64) && calls == hc[i].calls,
            "column chunk stating %u of its 4000 records: damage at the chunk, %llu calls delivered (%s)", hc[i].nrec,
            (unsigned long long)calls, st.error);
    }
    free(cb);
  }
  free(mut); free(raw); free(b); free(orig);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) {}
  return check_done();
}
