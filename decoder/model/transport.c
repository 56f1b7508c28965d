/* transport.c — aggregation of parsed NCCL log lines into connections and facts (transport.h). */
#include "model/transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mix.h"
#include "io/readcount.h"

void ncs_tmodel_init(struct ncs_tmodel *m) {
  memset(m, 0, sizeof *m);
  m->chan_coll = m->chan_nvls = m->chan_p2p = m->chan_collnet = -1;
}

void ncs_tmodel_free(struct ncs_tmodel *m) {
  for (size_t i = 0; i < m->nring_list; i++) free(m->ring_list[i].ranks);
  free(m->ring_list);
  free(m->algo_list);
  free(m->conns);
  free(m->hash);
  free(m->inits);
  memset(m, 0, sizeof *m);
}

static uint64_t conn_hash(const struct ncs_tconn *c) {
  uint64_t h = NCS_FNV64_OFFSET;
  h = ncs_fnv64(h, c->host, strlen(c->host));
  int k[6] = { (int)c->pid, c->channel, c->conn, c->from, c->to, c->dir };
  h = ncs_fnv64(h, k, sizeof k);
  return ncs_fnv64(h, c->detail, strlen(c->detail)) ^ (uint64_t)c->tclass;
}
static int conn_eq(const struct ncs_tconn *a, const struct ncs_tconn *b) {
  return a->pid == b->pid && a->channel == b->channel && a->conn == b->conn && a->from == b->from &&
         a->to == b->to && a->dir == b->dir && a->tclass == b->tclass && !strcmp(a->host, b->host) &&
         !strcmp(a->detail, b->detail);
}
static int rehash(struct ncs_tmodel *m, size_t ncap) {
  uint32_t *h = calloc(ncap, sizeof *h);
  if (!h) return -1;
  for (size_t i = 0; i < m->nconns; i++) {
    size_t s = (size_t)conn_hash(&m->conns[i]) & (ncap - 1);
    while (h[s]) s = (s + 1) & (ncap - 1);
    h[s] = (uint32_t)(i + 1);
  }
  free(m->hash);
  m->hash = h;
  m->hcap = ncap;
  return 0;
}
static int add_conn(struct ncs_tmodel *m, const struct ncs_tconn *c) {
  if ((m->nconns + 1) * 2 > m->hcap && rehash(m, m->hcap ? m->hcap * 2 : 32) != 0) return -1;
  size_t s = (size_t)conn_hash(c) & (m->hcap - 1);
  while (m->hash[s]) {
    if (conn_eq(&m->conns[m->hash[s] - 1], c)) return 0;
    s = (s + 1) & (m->hcap - 1);
  }
  if (m->nconns == m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 8;
    struct ncs_tconn *n = realloc(m->conns, nc * sizeof *n);
    if (!n) return -1;
    m->conns = n;
    m->cap = nc;
  }
  m->conns[m->nconns] = *c;
  m->hash[s] = (uint32_t)(++m->nconns);
  return 0;
}

int ncs_tmodel_add_conn(struct ncs_tmodel *m, const struct ncs_tconn *c) { return add_conn(m, c); }

void ncs_tconn_of(const struct ncs_nl_rec *r, struct ncs_tconn *c) {
  memset(c, 0, sizeof *c);
  memcpy(c->host, r->host, sizeof c->host);
  c->pid = r->pid;
  c->channel = r->u.t.channel; c->conn = r->u.t.conn; c->from = r->u.t.from; c->to = r->u.t.to;
  c->dir = r->u.t.dir; c->tclass = r->u.t.tclass; c->net_dev = r->u.t.net_dev; c->proxy = r->u.t.proxy;
  c->flags = r->u.t.flags;
  memcpy(c->from_tag, r->u.t.from_tag, sizeof c->from_tag);
  memcpy(c->to_tag, r->u.t.to_tag, sizeof c->to_tag);
  memcpy(c->detail, r->u.t.detail, sizeof c->detail);
  memcpy(c->mode, r->u.t.mode, sizeof c->mode);
}

int ncs_tmodel_line(struct ncs_tmodel *m, const char *line, size_t len) {
  struct ncs_nl_rec r;
  int k = ncs_nl_parse(line, len, &r);
  m->lines++;
  if (k != NCS_NL_NONE) m->lines_used++;
  if (k != NCS_NL_NONE || r.has_prefix) m->lines_nccl++;
  switch (k) {
  case NCS_NL_TRANSPORT: {
    struct ncs_tconn c;
    ncs_tconn_of(&r, &c);
    if (add_conn(m, &c) != 0) return -1;
    break;
  }
  case NCS_NL_VERSION: {
    for (int i = 0; i < m->nvers; i++)
      if (m->vers[i].code == r.u.version.code && m->vers[i].pid == r.pid && !strcmp(m->vers[i].host, r.host))
        return k;
    if (m->nvers < NCS_TM_MAX_VERS) {
      struct ncs_tver *v = &m->vers[m->nvers++];
      memcpy(v->text, r.u.version.text, sizeof v->text);
      v->code = r.u.version.code;
      memcpy(v->host, r.host, sizeof v->host);
      v->pid = r.pid;
    }
    break;
  }
  case NCS_NL_INIT:
  case NCS_NL_COMMINFO:
    if (k == NCS_NL_INIT) {
      if (m->ninits == m->icap) {
        size_t nc = m->icap ? m->icap * 2 : 16;
        struct ncs_tinit *n = realloc(m->inits, nc * sizeof *n);
        if (!n) return -1;
        m->inits = n;
        m->icap = nc;
      }
      struct ncs_tinit *t = &m->inits[m->ninits++];
      t->in = r.u.init;
      memcpy(t->host, r.host, sizeof t->host);
      t->pid = r.pid;
    }
    break;
  case NCS_NL_RING: {
    m->rings++;
    const struct ncs_nl_ring *g = &r.u.ring;
    int seen = 0;
    for (size_t i = 0; i < m->nring_list && !seen; i++)
      seen = m->ring_list[i].channel == g->channel && m->ring_list[i].n == g->nranks_listed &&
             !memcmp(m->ring_list[i].ranks, g->ranks, (size_t)g->nranks_listed * sizeof(int));
    if (seen || m->nring_list >= 64) break;
    if (m->nring_list == m->ring_cap) {
      size_t nc = m->ring_cap ? m->ring_cap * 2 : 4;
      struct ncs_tring *n = realloc(m->ring_list, nc * sizeof *n);
      if (!n) return -1;
      m->ring_list = n;
      m->ring_cap = nc;
    }
    int *rk = malloc((size_t)g->nranks_listed * sizeof(int));
    if (!rk) return -1;
    memcpy(rk, g->ranks, (size_t)g->nranks_listed * sizeof(int));
    m->ring_list[m->nring_list++] = (struct ncs_tring){ g->channel, g->nchannels, g->nranks_listed, rk };
    break;
  }
  case NCS_NL_TREE:
    if (!m->trees) memcpy(m->tree_text, r.u.tree.text, sizeof m->tree_text);
    m->trees++;
    break;
  case NCS_NL_NVLS:
    if (r.u.nvls.available) m->nvls_available++;
    else m->nvls_unavailable++;
    break;
  case NCS_NL_CHANNELS:
    m->channel_lines++;
    m->chan_coll = r.u.channels.coll;
    m->chan_nvls = r.u.channels.nvls;
    m->chan_p2p = r.u.channels.p2p;
    m->chan_collnet = r.u.channels.collnet;
    break;
  case NCS_NL_ALGO:
    m->algos++;
    if (m->nalgo_list < 64) {
      if (m->nalgo_list == m->algo_cap) {
        size_t nc = m->algo_cap ? m->algo_cap * 2 : 8;
        struct ncs_talgo *n = realloc(m->algo_list, nc * sizeof *n);
        if (!n) return -1;
        m->algo_list = n;
        m->algo_cap = nc;
      }
      m->algo_list[m->nalgo_list++] = (struct ncs_talgo){ r.u.algo.bytes, r.u.algo.algo, r.u.algo.proto, r.u.algo.time_us };
    }
    break;
  case NCS_NL_COLL: m->colls++; break;
  case NCS_NL_NETUSE:
    if (r.u.netuse.ib_missing) m->ib_missing = 1;
    else {
      int seen = 0;
      for (int i = 0; i < m->nnets; i++) seen |= !strcmp(m->nets[i], r.u.netuse.name);
      if (!seen && m->nnets < NCS_TM_MAX_NETS) memcpy(m->nets[m->nnets++], r.u.netuse.name, 48);
    }
    break;
  case NCS_NL_WARN:
    m->warns_total++;
    if (m->nwarns < NCS_TM_MAX_WARN) {
      memcpy(m->warns[m->nwarns].where, r.u.warn.where, 64);
      memcpy(m->warns[m->nwarns].text, r.u.warn.text, 200);
      memcpy(m->warns[m->nwarns].host, r.host, 64);
      m->warns[m->nwarns].pid = r.pid;
      m->nwarns++;
    }
    break;
  default: break;
  }
  return k;
}

/* Lines of several processes written to one file (a shared NCCL_DEBUG_FILE, one stdout for
 * all ranks) interleave mid-line: a process's line may hold, after its first bytes, another's
 * whole line, its own rest coming as the next line ("...via S" + "host:pid:tid [d] NCCL INFO
 * ... via SHM/direct/direct", then "HM/direct/direct"). A line holding the prefix
 * "HOST:PID:TID [" of a host already seen in the file, past its start, is cut there: the
 * part before waits for its rest (the next line, when that has no NCCL prefix of its own), the
 * part after is a line of its own. */
#define SPLICE_HOSTS 8
struct splice { char hosts[SPLICE_HOSTS][64]; int nhosts; char *head; size_t hlen, hcap; };

static void splice_host(struct splice *s, const char *host) {
  if (!host[0] || s->nhosts == SPLICE_HOSTS) return;
  for (int i = 0; i < s->nhosts; i++) if (!strcmp(s->hosts[i], host)) return;
  snprintf(s->hosts[s->nhosts++], sizeof s->hosts[0], "%s", host);
}
/* Offset (> 0) of the first "HOST:PID:TID [" of a known host inside l[0..n), else 0. */
static size_t splice_at(const struct splice *s, const char *l, size_t n) {
  size_t best = 0;
  for (int h = 0; h < s->nhosts; h++) {
    size_t hl = strlen(s->hosts[h]);
    for (const char *p = l + 1; p < l + n;) {
      p = memmem(p, (size_t)(l + n - p), s->hosts[h], hl);
      if (!p) break;
      const char *q = p + hl, *e = l + n;
      int ok = q < e && *q == ':';
      for (int k = 0; ok && k < 2; k++) { /* :PID:TID */
        const char *d = ++q;
        while (q < e && *q >= '0' && *q <= '9') q++;
        ok = q > d && q < e && *q == (k ? ' ' : ':');
      }
      if (ok && q + 1 < e && q[1] == '[') { if (!best || (size_t)(p - l) < best) best = (size_t)(p - l); break; }
      p++;
    }
  }
  return best;
}
/* Feeds one piece of text as a line, learning its host. */
static int splice_feed(struct ncs_tmodel *m, struct splice *s, const char *l, size_t n) {
  struct ncs_nl_rec r;
  if (ncs_nl_parse(l, n, &r) != NCS_NL_NONE || r.has_prefix) splice_host(s, r.host);
  return ncs_tmodel_line(m, l, n) < 0 ? -1 : 0;
}
static int splice_line(struct ncs_tmodel *m, struct splice *s, char *l, size_t n) {
  if (s->head) { /* a line cut by another: its rest is this line, unless this one is a line of its own */
    struct ncs_nl_rec r;
    ncs_nl_parse(l, n, &r);
    char *head = s->head;
    size_t hl = s->hlen;
    s->head = NULL;
    if (!r.has_prefix) {
      if (hl + n + 1 > s->hcap) {
        char *b = realloc(head, hl + n + 1);
        if (!b) { free(head); return -1; }
        head = b;
        s->hcap = hl + n + 1;
      }
      memcpy(head + hl, l, n);
      int rc = splice_feed(m, s, head, hl + n);
      s->head = NULL;
      free(head);
      s->hcap = 0;
      return rc;
    }
    int rc = splice_feed(m, s, head, hl); /* never completed: as it is */
    free(head);
    s->hcap = 0;
    if (rc) return rc;
  }
  size_t at = splice_at(s, l, n);
  if (at) {
    s->head = malloc(at + 1);
    if (!s->head) return -1;
    memcpy(s->head, l, at);
    s->hlen = at;
    s->hcap = at + 1;
    return splice_feed(m, s, l + at, n - at);
  }
  return splice_feed(m, s, l, n);
}

int ncs_tmodel_file(struct ncs_tmodel *m, const char *path) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return -1;
  if (f != stdin) ncs_readcount_read(path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  struct splice sp;
  memset(&sp, 0, sizeof sp);
  while ((n = getline(&line, &cap, f)) >= 0) {
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (splice_line(m, &sp, line, (size_t)n) < 0) { errno = ENOMEM; rc = -1; break; }
  }
  if (rc == 0 && sp.head && splice_feed(m, &sp, sp.head, sp.hlen) < 0) { errno = ENOMEM; rc = -1; }
  free(sp.head);
  if (rc == 0 && ferror(f)) { errno = EIO; rc = -1; }
  free(line);
  if (f != stdin) fclose(f);
  return rc;
}

const char *ncs_tmodel_version(const struct ncs_tmodel *m) { return m->nvers ? m->vers[0].text : NULL; }

int ncs_tmodel_nversions(const struct ncs_tmodel *m) {
  int n = 0;
  for (int i = 0; i < m->nvers; i++) {
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= m->vers[j].code == m->vers[i].code;
    n += !dup;
  }
  return n;
}

size_t ncs_tmodel_count(const struct ncs_tmodel *m, int tclass) {
  size_t n = 0;
  for (size_t i = 0; i < m->nconns; i++) n += tclass < 0 || m->conns[i].tclass == tclass;
  return n;
}

const char *ncs_tconn_label(const struct ncs_tconn *c, char *buf, size_t cap) {
  if (c->tclass == NCS_TC_SHM && !strcmp(c->mode, "direct shared memory"))
    snprintf(buf, cap, "SHM/%s", c->detail);
  else if (c->detail[0])
    snprintf(buf, cap, "%s/%s", ncs_tclass_name(c->tclass), c->detail);
  else
    snprintf(buf, cap, "%s", ncs_tclass_name(c->tclass));
  return buf;
}

static const char *dir_name(int d) { return d == NCS_DIR_SEND ? "send" : d == NCS_DIR_RECV ? "receive" : NULL; }

static void json_conn(struct ncs_json *j, const struct ncs_tconn *c) {
  ncs_json_obj_begin(j, NULL);
  ncs_json_int(j, "channel", c->channel);
  if (c->conn >= 0) ncs_json_int(j, "conn", c->conn);
  ncs_json_int(j, "from", c->from);
  ncs_json_int(j, "to", c->to);
  ncs_json_str(j, "transport", ncs_tclass_name(c->tclass));
  ncs_json_str(j, "detail", c->detail);
  ncs_json_str(j, "mode", c->mode);
  if (dir_name(c->dir)) ncs_json_str(j, "direction", dir_name(c->dir));
  if (c->net_dev >= 0) ncs_json_int(j, "net_dev", c->net_dev);
  if (c->tclass == NCS_TC_NET || c->tclass == NCS_TC_COLLNET) ncs_json_bool(j, "gdrdma", (c->flags & NCS_TF_GDR) != 0);
  if (c->flags & NCS_TF_SHARED) ncs_json_bool(j, "shared", 1);
  if (c->flags & NCS_TF_PXN) ncs_json_int(j, "pxn_proxy", c->proxy);
  if (c->flags & NCS_TF_READ) ncs_json_bool(j, "read", 1);
  if (c->flags & NCS_TF_CE) ncs_json_bool(j, "ce", 1);
  if (c->from_tag[0]) ncs_json_str(j, "from_dev", c->from_tag);
  if (c->to_tag[0]) ncs_json_str(j, "to_dev", c->to_tag);
  if (c->host[0]) ncs_json_str(j, "host", c->host);
  if (c->pid >= 0) ncs_json_int(j, "pid", c->pid);
  ncs_json_obj_end(j);
}

void ncs_tmodel_json_transports(const struct ncs_tmodel *m, struct ncs_json *j, const char *key) {
  ncs_json_arr_begin(j, key);
  for (size_t i = 0; i < m->nconns; i++) json_conn(j, &m->conns[i]);
  ncs_json_arr_end(j);
}

void ncs_tmodel_json(const struct ncs_tmodel *m, struct ncs_json *j) {
  ncs_json_str(j, "nccl_version", ncs_tmodel_version(m));
  ncs_json_arr_begin(j, "nccl_versions");
  for (int i = 0; i < m->nvers; i++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "version", m->vers[i].text);
    ncs_json_int(j, "code", m->vers[i].code);
    if (m->vers[i].host[0]) ncs_json_str(j, "host", m->vers[i].host);
    if (m->vers[i].pid >= 0) ncs_json_int(j, "pid", m->vers[i].pid);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_tmodel_json_transports(m, j, "transports");
  ncs_json_obj_begin(j, "summary");
  static const int classes[] = { NCS_TC_P2P, NCS_TC_SHM, NCS_TC_NET, NCS_TC_COLLNET, NCS_TC_NVLS, NCS_TC_UNKNOWN };
  for (size_t i = 0; i < sizeof classes / sizeof *classes; i++)
    ncs_json_uint(j, ncs_tclass_name(classes[i]), ncs_tmodel_count(m, classes[i]));
  ncs_json_uint(j, "lines", (uint64_t)m->lines);
  ncs_json_uint(j, "lines_used", (uint64_t)m->lines_used);
  ncs_json_uint(j, "ring_lines", (uint64_t)m->rings);
  ncs_json_uint(j, "tree_lines", (uint64_t)m->trees);
  ncs_json_uint(j, "algo_lines", (uint64_t)m->algos);
  ncs_json_uint(j, "coll_lines", (uint64_t)m->colls);
  ncs_json_obj_end(j);
  ncs_json_arr_begin(j, "inits");
  for (size_t i = 0; i < m->ninits; i++) {
    const struct ncs_nl_init *in = &m->inits[i].in;
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "phase", in->start ? "START" : "COMPLETE");
    if (in->api[0]) ncs_json_str(j, "api", in->api);
    char hex[24];
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)in->comm_ptr);
    ncs_json_str(j, "comm", hex);
    if (in->comm_id) { snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)in->comm_id); ncs_json_str(j, "comm_id", hex); }
    ncs_json_int(j, "rank", in->rank);
    ncs_json_int(j, "nranks", in->nranks);
    ncs_json_int(j, "cuda_dev", in->cuda_dev);
    if (in->nvml_dev >= 0) ncs_json_int(j, "nvml_dev", in->nvml_dev);
    if (in->bus_id[0]) ncs_json_str(j, "bus_id", in->bus_id);
    if (m->inits[i].host[0]) ncs_json_str(j, "host", m->inits[i].host);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_arr_begin(j, "rings");
  for (size_t i = 0; i < m->nring_list; i++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_int(j, "channel", m->ring_list[i].channel);
    ncs_json_int(j, "nchannels", m->ring_list[i].nchannels);
    ncs_json_arr_begin(j, "ranks");
    for (int k = 0; k < m->ring_list[i].n; k++) ncs_json_int(j, NULL, m->ring_list[i].ranks[k]);
    ncs_json_arr_end(j);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_str(j, "trees", m->trees ? m->tree_text : NULL);
  ncs_json_obj_begin(j, "channels");
  if (m->chan_coll >= 0) ncs_json_int(j, "coll", m->chan_coll);
  if (m->chan_collnet >= 0) ncs_json_int(j, "collnet", m->chan_collnet);
  if (m->chan_nvls >= 0) ncs_json_int(j, "nvls", m->chan_nvls);
  if (m->chan_p2p >= 0) ncs_json_int(j, "p2p", m->chan_p2p);
  ncs_json_obj_end(j);
  ncs_json_arr_begin(j, "algorithms");
  static const char *const algos[] = { "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT" };
  static const char *const protos[] = { "LL", "LL128", "Simple" };
  for (size_t i = 0; i < m->nalgo_list; i++) {
    const struct ncs_talgo *a = &m->algo_list[i];
    ncs_json_obj_begin(j, NULL);
    ncs_json_int(j, "bytes", a->bytes);
    ncs_json_int(j, "algo", a->algo);
    if (a->algo >= 0 && a->algo < 7) ncs_json_str(j, "algo_name", algos[a->algo]);
    ncs_json_int(j, "proto", a->proto);
    if (a->proto >= 0 && a->proto < 3) ncs_json_str(j, "proto_name", protos[a->proto]);
    ncs_json_num(j, "time_us", a->time_us);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_obj_begin(j, "nvls");
  ncs_json_int(j, "available", m->nvls_available);
  ncs_json_int(j, "not_available", m->nvls_unavailable);
  ncs_json_obj_end(j);
  ncs_json_arr_begin(j, "networks");
  for (int i = 0; i < m->nnets; i++) ncs_json_str(j, NULL, m->nets[i]);
  ncs_json_arr_end(j);
  ncs_json_bool(j, "ib_not_found", m->ib_missing);
  ncs_json_arr_begin(j, "warnings");
  for (int i = 0; i < m->nwarns; i++) {
    ncs_json_obj_begin(j, NULL);
    ncs_json_str(j, "where", m->warns[i].where);
    ncs_json_str(j, "text", m->warns[i].text);
    if (m->warns[i].host[0]) ncs_json_str(j, "host", m->warns[i].host);
    ncs_json_obj_end(j);
  }
  ncs_json_arr_end(j);
  ncs_json_int(j, "warnings_total", m->warns_total);
}

#define MATRIX_MAX 64
void ncs_tmodel_matrix(const struct ncs_tmodel *m, FILE *f, const char *indent) {
  int n = 0;
  for (size_t i = 0; i < m->nconns; i++) {
    if (m->conns[i].from + 1 > n) n = m->conns[i].from + 1;
    if (m->conns[i].to + 1 > n) n = m->conns[i].to + 1;
  }
  if (n == 0) { fprintf(f, "%s(no connections)\n", indent); return; }
  if (n > MATRIX_MAX) {
    fprintf(f, "%s(%d ranks: matrix shown for the first %d)\n", indent, n, MATRIX_MAX);
    n = MATRIX_MAX;
  }
  unsigned char *cell = calloc((size_t)n * (size_t)n, 1);
  if (!cell) return;
  for (size_t i = 0; i < m->nconns; i++) {
    const struct ncs_tconn *c = &m->conns[i];
    if (c->from < 0 || c->to < 0 || c->from >= n || c->to >= n) continue;
    cell[c->from * n + c->to] |= (unsigned char)(1u << c->tclass);
  }
  fprintf(f, "%sfrom\\to", indent);
  for (int b = 0; b < n; b++) fprintf(f, " %7d", b);
  fputc('\n', f);
  for (int a = 0; a < n; a++) {
    fprintf(f, "%s%7d", indent, a);
    for (int b = 0; b < n; b++) {
      unsigned v = cell[a * n + b];
      char s[40] = "";
      if (a == b) strcpy(s, "X");
      else if (!v) strcpy(s, ".");
      else
        for (int t = 0; t < 6; t++)
          if (v & (1u << t)) {
            if (s[0]) strcat(s, "+");
            strcat(s, ncs_tclass_name(t));
          }
      fprintf(f, " %7s", s);
    }
    fputc('\n', f);
  }
  free(cell);
}

void ncs_tmodel_text(const struct ncs_tmodel *m, FILE *f) {
  fprintf(f, "NCCL version:");
  if (!m->nvers) fprintf(f, " (not in the log)");
  for (int i = 0; i < m->nvers; i++) {
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= m->vers[j].code == m->vers[i].code;
    if (!dup) { fputc(' ', f); ncs_text_escape(f, m->vers[i].text, strlen(m->vers[i].text)); }
  }
  fputc('\n', f);
  fprintf(f, "lines: %ld read, %ld recognised\n", m->lines, m->lines_used);
  fprintf(f, "connections: %zu (P2P %zu, SHM %zu, NET %zu, COLLNET %zu)\n", m->nconns,
          ncs_tmodel_count(m, NCS_TC_P2P), ncs_tmodel_count(m, NCS_TC_SHM), ncs_tmodel_count(m, NCS_TC_NET),
          ncs_tmodel_count(m, NCS_TC_COLLNET));
  /* distinct labels with counts */
  size_t shown = 0;
  for (size_t i = 0; i < m->nconns && shown < 16; i++) {
    char li[160], lj[160];
    ncs_tconn_label(&m->conns[i], li, sizeof li);
    int first = 1;
    size_t cnt = 0;
    for (size_t k = 0; k < m->nconns; k++) {
      ncs_tconn_label(&m->conns[k], lj, sizeof lj);
      if (!strcmp(li, lj)) { if (k < i) { first = 0; break; } cnt++; }
    }
    if (!first) continue;
    fprintf(f, "  %6zu  ", cnt);
    ncs_text_escape(f, li, strlen(li));
    fputc('\n', f);
    shown++;
  }
  if (m->nvls_available || m->nvls_unavailable)
    fprintf(f, "NVLS: available on %d device lines, not available on %d\n", m->nvls_available, m->nvls_unavailable);
  if (m->nnets || m->ib_missing) {
    fprintf(f, "network:");
    for (int i = 0; i < m->nnets; i++) { fputc(' ', f); ncs_text_escape(f, m->nets[i], strlen(m->nets[i])); }
    if (m->ib_missing) fprintf(f, " (NET/IB: no device found)");
    fputc('\n', f);
  }
  if (m->ninits) fprintf(f, "communicator init lines: %zu\n", m->ninits);
  if (m->chan_coll >= 0)
    fprintf(f, "channels: %d coll, %d p2p, %d nvls\n", m->chan_coll, m->chan_p2p, m->chan_nvls > 0 ? m->chan_nvls : 0);
  for (size_t i = 0; i < m->nring_list && i < 4; i++) {
    fprintf(f, "ring channel %d/%d:", m->ring_list[i].channel, m->ring_list[i].nchannels);
    for (int k = 0; k < m->ring_list[i].n && k < 32; k++) fprintf(f, " %d", m->ring_list[i].ranks[k]);
    fprintf(f, "%s\n", m->ring_list[i].n > 32 ? " ..." : "");
  }
  if (m->nring_list > 4) fprintf(f, "(%zu distinct ring orders)\n", m->nring_list);
  fprintf(f, "transport matrix (rank x rank):\n");
  ncs_tmodel_matrix(m, f, "  ");
  if (m->warns_total) {
    fprintf(f, "warnings: %ld\n", m->warns_total);
    for (int i = 0; i < m->nwarns; i++) {
      fprintf(f, "  ");
      ncs_text_escape(f, m->warns[i].where, strlen(m->warns[i].where));
      fprintf(f, ": ");
      ncs_text_escape(f, m->warns[i].text, strlen(m->warns[i].text));
      fputc('\n', f);
    }
  }
}
