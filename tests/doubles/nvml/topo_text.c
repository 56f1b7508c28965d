/* topo_text.c — parser of `nvidia-smi topo -m` text for the NVML double (topo_text.h). */
#include "topo_text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rel_of(const char *t, int *nv) {
  *nv = 0;
  if (!strcmp(t, "X")) return 0;
  if (!strncmp(t, "NV", 2) && isdigit((unsigned char)t[2])) { *nv = atoi(t + 2); return 50; }
  if (!strcmp(t, "PIX")) return 10;
  if (!strcmp(t, "PXB")) return 20;
  if (!strcmp(t, "PHB")) return 30;
  if (!strcmp(t, "NODE")) return 40;
  if (!strcmp(t, "SYS") || !strcmp(t, "SOC")) return 50;
  return -1;
}
static int p2p_of(const char *t) {
  static const char *const names[] = { "OK", "CNS", "GNS", "TNS", "DR", "NS", "U" };
  static const int codes[] = { 0, 1, 2, 3, 4, 5, 6 };
  for (int i = 0; i < 7; i++) if (!strcmp(t, names[i])) return codes[i];
  return -1;
}

/* Splits a line into whitespace-separated tokens (in place). */
static int tokens(char *s, char **tok, int max) {
  int n = 0;
  while (*s && n < max) {
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) break;
    tok[n++] = s;
    while (*s && !isspace((unsigned char)*s)) s++;
    if (*s) *s++ = 0;
  }
  return n;
}

/* Value of key=... in a directive line, up to the next " word=" or the end. */
static int directive(const char *line, const char *key, char *out, size_t cap) {
  char pat[32];
  snprintf(pat, sizeof pat, "%s=", key);
  const char *p = line;
  while ((p = strstr(p, pat)) != NULL) {
    if (p == line || p[-1] == ' ' || p[-1] == ':') break;
    p++;
  }
  if (!p) return 0;
  p += strlen(pat);
  const char *e = p;
  while (*e && *e != '\n' && *e != '\r') {
    if (*e == ' ') {
      const char *w = e + 1;
      while (*w && (isalnum((unsigned char)*w) || *w == '_')) w++;
      if (*w == '=') break;
    }
    e++;
  }
  size_t n = (size_t)(e - p) < cap - 1 ? (size_t)(e - p) : cap - 1;
  memcpy(out, p, n);
  out[n] = 0;
  return 1;
}

int ncsd_topo_parse(const char *text, struct ncsd_machine *m, char *why, int whylen) {
  memset(m, 0, sizeof *m);
  char defname[96] = "NVIDIA Test GPU";
  unsigned defgen = 4, defwidth = 16;
  int matrix = 0;        /* 0 none yet, 1 topology, 2 p2p */
  int hdr_gpus = 0;
  char *copy = strdup(text);
  if (!copy) { snprintf(why, (size_t)whylen, "out of memory"); return -1; }
  struct { int gpu; char name[96], bus[32]; unsigned gen, width; } over[NCSD_MAX_GPUS];
  int nover = 0;
  /* strtok_r: the shim calls nvmlInit from its writer thread while the job's thread may be in
   * another library's strtok (the NCCL double's debug.c): strtok's hidden state is shared */
  char *save = NULL;
  for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *nl = strchr(line, '\r');
    if (nl) *nl = 0;
    const char *d = strstr(line, "nvmldouble:");
    if (line[0] == '#' && d) {
      char v[96];
      if (directive(d, "gpu", v, sizeof v) && nover < NCSD_MAX_GPUS) {
        over[nover].gpu = atoi(v);
        over[nover].name[0] = over[nover].bus[0] = 0;
        over[nover].gen = over[nover].width = 0;
        directive(d, "name", over[nover].name, sizeof over[nover].name);
        directive(d, "bus", over[nover].bus, sizeof over[nover].bus);
        if (directive(d, "gen", v, sizeof v)) over[nover].gen = (unsigned)atoi(v);
        if (directive(d, "width", v, sizeof v)) over[nover].width = (unsigned)atoi(v);
        nover++;
      } else {
        directive(d, "name", defname, sizeof defname);
        if (directive(d, "gen", v, sizeof v)) defgen = (unsigned)atoi(v);
        if (directive(d, "width", v, sizeof v)) defwidth = (unsigned)atoi(v);
      }
      continue;
    }
    if (line[0] == '#') continue;
    char *tok[96];
    int n = tokens(line, tok, 96);
    if (n == 0) continue;
    if (!strcmp(tok[0], "GPU0") && (n == 1 || !strncmp(tok[1], "GPU", 3) || !strncmp(tok[1], "NIC", 3) ||
                                     !strcmp(tok[1], "CPU"))) { /* a header row */
      int g = 0;
      while (g < n && !strncmp(tok[g], "GPU", 3) && atoi(tok[g] + 3) == g) g++;
      if (matrix == 0) { matrix = 1; hdr_gpus = g; }
      else if (matrix == 1) matrix = 2;
      continue;
    }
    if (!matrix || strncmp(tok[0], "GPU", 3) || !isdigit((unsigned char)tok[0][3])) continue;
    int row = atoi(tok[0] + 3);
    if (row < 0 || row >= NCSD_MAX_GPUS || row >= hdr_gpus) continue;
    if (n - 1 < hdr_gpus) { snprintf(why, (size_t)whylen, "row GPU%d has %d cells, header has %d GPUs", row, n - 1, hdr_gpus); free(copy); return -1; }
    for (int c = 0; c < hdr_gpus; c++) {
      const char *t = tok[1 + c];
      if (matrix == 1) {
        int nv, r = rel_of(t, &nv);
        if (r < 0) { snprintf(why, (size_t)whylen, "row GPU%d column GPU%d: unknown cell '%s'", row, c, t); free(copy); return -1; }
        if ((row == c) != (r == 0 && nv == 0)) { snprintf(why, (size_t)whylen, "row GPU%d column GPU%d: 'X' misplaced", row, c); free(copy); return -1; }
        m->nv[row][c] = nv;
        m->rel[row][c] = r;
      } else {
        int p = p2p_of(t);
        if (row != c && p >= 0) m->p2p_read[row][c] = p;
      }
    }
    if (matrix == 1 && row + 1 > m->ngpus) m->ngpus = row + 1;
  }
  free(copy);
  if (m->ngpus == 0) { snprintf(why, (size_t)whylen, "no GPU rows found"); return -1; }
  for (int i = 0; i < m->ngpus; i++) {
    snprintf(m->gpu[i].name, sizeof m->gpu[i].name, "%s", defname);
    snprintf(m->gpu[i].bus_id, sizeof m->gpu[i].bus_id, "00000000:%02X:00.0", 0x10 + 0x10 * i);
    m->gpu[i].gen = m->gpu[i].gen_max = defgen;
    m->gpu[i].width = m->gpu[i].width_max = defwidth;
  }
  for (int k = 0; k < nover; k++) {
    int g = over[k].gpu;
    if (g < 0 || g >= m->ngpus) continue;
    if (over[k].name[0]) snprintf(m->gpu[g].name, sizeof m->gpu[g].name, "%s", over[k].name);
    if (over[k].bus[0]) snprintf(m->gpu[g].bus_id, sizeof m->gpu[g].bus_id, "%s", over[k].bus);
    if (over[k].gen) m->gpu[g].gen = m->gpu[g].gen_max = over[k].gen;
    if (over[k].width) m->gpu[g].width = m->gpu[g].width_max = over[k].width;
  }
  return 0;
}

int ncsd_topo_load(const char *path, struct ncsd_machine *m, char *why, int whylen) {
  FILE *f = fopen(path, "rb");
  if (!f) { snprintf(why, (size_t)whylen, "%s: cannot open", path); return -1; }
  char *buf = malloc(1 << 20);
  if (!buf) { fclose(f); return -1; }
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = 0;
  fclose(f);
  int rc = ncsd_topo_parse(buf, m, why, whylen);
  free(buf);
  return rc;
}
