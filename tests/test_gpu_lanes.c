/* test_gpu_lanes.c — the HTML page's GPU-stream lanes (decoder/render/gpu_lanes.c) on kernels with
 * known times: one lane per stream, the lowest stream ids first and the rest on one "other
 * streams" lane; the exposed lane and the window's figures are the NCCL time with no compute
 * beside it, exactly; no kernel activity is said in words. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "render/gpu_lanes.h"

static void add(struct ncs_gpulanes *g, int file, uint32_t cls, uint32_t stream, int64_t s_us, int64_t e_us) {
  struct ncs_kernel k = {.kclass = cls, .stream = stream, .start = (uint64_t)s_us * 1000,
                         .duration = (uint64_t)(e_us - s_us) * 1000};
  struct ncs_aligned_kernel a = {&k, s_us * 1000, e_us * 1000};
  ncs_gpulanes_add(g, file, &a);
}

static char *page(const struct ncs_gpulanes *g, const struct ncs_jobdata *J) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  ncs_gpulanes_html(f, g, J);
  fclose(f);
  return buf;
}

/* The lanes' labels in order, space-separated, and the number of bars on the lane `label`. */
static void lanes(const char *html, char *out, size_t n, const char *label, int *bars) {
  out[0] = 0;
  *bars = -1;
  for (const char *p = strstr(html, "class=\"lbl\">"); p; p = strstr(p + 1, "class=\"lbl\">")) {
    const char *a = p + strlen("class=\"lbl\">"), *b = strchr(a, '<');
    if (!b || strncmp(b, "</text><rect class=\"lane\"", 25)) continue;
    size_t used = strlen(out);
    snprintf(out + used, n - used, "%s%.*s", used ? "|" : "", (int)(b - a), a);
    if (strlen(label) == (size_t)(b - a) && !strncmp(a, label, (size_t)(b - a))) {
      const char *end = strchr(b, '\n');
      *bars = 0;
      for (const char *q = strstr(b, "class=\"call\""); q && (!end || q < end); q = strstr(q + 1, "class=\"call\"")) (*bars)++;
    }
  }
}

int main(void) {
  struct ncs_jrank r[3];
  memset(r, 0, sizeof r);
  r[0].rank = 0; r[1].rank = 1; r[2].rank = 2;
  struct ncs_jobdata J;
  memset(&J, 0, sizeof J);
  J.n = 3; J.r = r; /* rank 2 has no kernel activity */

  struct ncs_gpulanes *g = ncs_gpulanes_new();
  CHECK(g != NULL, "gpu lanes: created");
  if (!g) return check_done();
  char *none = page(g, &J);
  CHECK(none && strstr(none, "id=\"gpu-streams\"") && strstr(none, "No kernel activity in the traces"),
        "gpu lanes: without kernels the section says there is no kernel activity");
  free(none);

  /* rank 0: an NCCL kernel 1..3 ms on stream 30, compute 2..4 ms on stream 20, then compute on
   * 7 more streams (19 down to 13) at 5..6 ms: 9 streams in all */
  add(g, 0, NCS_KCLASS_NCCL, 30, 1000, 3000);
  add(g, 0, NCS_KCLASS_COMPUTE, 20, 2000, 4000);
  for (uint32_t s = 19; s >= 13; s--) add(g, 0, NCS_KCLASS_COMPUTE, s, 5000, 6000);
  /* rank 1: a copy 0..1 ms on stream 5 and an NCCL kernel 0.5..1.5 ms on stream 6 (copies count as compute) */
  add(g, 1, NCS_KCLASS_MEMCPY, 5, 0, 1000);
  add(g, 1, NCS_KCLASS_NCCL, 6, 500, 1500);
  char *html = page(g, &J);
  CHECK(html != NULL, "gpu lanes: page written");
  if (!html) return check_done();
  char got[1024];
  int bars;
  lanes(html, got, sizeof got, "rank 0 other streams", &bars);
  CHECK(!strcmp(got, "rank 0 stream 13|rank 0 stream 14|rank 0 stream 15|rank 0 stream 16|rank 0 stream 17|"
                     "rank 0 stream 18|rank 0 other streams|rank 0 exposed|rank 1 stream 5|rank 1 stream 6|rank 1 exposed"),
        "gpu lanes: one lane per stream, lowest ids first, 6 at most, then one for the rest, then exposed (%s)", got);
  CHECK(bars == 3, "gpu lanes: the other streams' lane holds the kernels of streams 19, 20 and 30 (%d bars)", bars);
  lanes(html, got, sizeof got, "rank 0 exposed", &bars);
  CHECK(bars == 1, "gpu lanes: rank 0's exposed lane is one bar, the NCCL time before compute starts (%d)", bars);
  CHECK(strstr(html, "<td class=\"l\">rank 0</td><td>3.000</td><td>2.000</td><td>1.000</td><td class=\"bad\">1.000</td><td>50.0%</td>") != NULL,
        "gpu lanes: rank 0 in the window: compute 3 ms, NCCL 2 ms, overlapped 1 ms, exposed 1 ms (50%%)");
  CHECK(strstr(html, "<td class=\"l\">rank 1</td><td>1.000</td><td>1.000</td><td>0.500</td><td class=\"bad\">0.500</td><td>50.0%</td>") != NULL,
        "gpu lanes: rank 1: a copy beside an NCCL kernel hides it like compute (exposed 0.5 of 1 ms)");
  CHECK(strstr(html, "6.000 ms from 0.000 ms into the job") != NULL,
        "gpu lanes: every kernel shown when each rank ran fewer than its share (window 0..6 ms)");
  CHECK(strstr(html, "No kernel activity from rank 2 (") != NULL, "gpu lanes: a rank without kernel activity is named");
  CHECK(strstr(html, "<script") == NULL, "gpu lanes: no script");
  free(html);
  ncs_gpulanes_free(g);
  return check_done();
}
