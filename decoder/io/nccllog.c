/* nccllog.c — NCCL debug-log line parser (see nccllog.h for the contract).
 *
 * Works on a bounded view [p, e) of the line; every helper advances a cursor and never reads
 * past e. Formats covered: NCCL 2.3 to 2.28 with launcher prefixes (tests/test_nccllog.c lists the
 * real logs it is checked on). */
#include "io/nccllog.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct cur { const char *p, *e; };

static int starts(const struct cur *c, const char *s) {
  size_t n = strlen(s);
  return (size_t)(c->e - c->p) >= n && memcmp(c->p, s, n) == 0;
}
static int eat(struct cur *c, const char *s) {
  if (!starts(c, s)) return 0;
  c->p += strlen(s);
  return 1;
}
static void skip_sp(struct cur *c) { while (c->p < c->e && (*c->p == ' ' || *c->p == '\t')) c->p++; }
/* Unsigned decimal; returns 0 when no digit. */
static int get_num(struct cur *c, long long *v) {
  const char *p = c->p;
  long long x = 0;
  while (p < c->e && isdigit((unsigned char)*p) && p - c->p < 18) { x = x * 10 + (*p - '0'); p++; }
  if (p == c->p) return 0;
  c->p = p; *v = x;
  return 1;
}
/* Optionally negative decimal. */
static int get_int(struct cur *c, int *v) {
  struct cur t = *c;
  int neg = eat(&t, "-");
  long long x;
  if (!get_num(&t, &x)) return 0;
  *c = t; *v = (int)(neg ? -x : x);
  return 1;
}
static int get_hex(struct cur *c, unsigned long long *v) {
  const char *p = c->p;
  unsigned long long x = 0;
  if (c->e - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  const char *d = p;
  while (p < c->e && isxdigit((unsigned char)*p) && p - d < 16) {
    int h = isdigit((unsigned char)*p) ? *p - '0' : (tolower((unsigned char)*p) - 'a' + 10);
    x = (x << 4) | (unsigned)h;
    p++;
  }
  if (p == d) return 0;
  c->p = p; *v = x;
  return 1;
}
static void copy_str(char *dst, size_t cap, const char *s, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = 0;
}
/* Finds needle in [p, e); NULL when absent. */
static const char *find(const char *p, const char *e, const char *needle) {
  size_t n = strlen(needle);
  for (; p + n <= e; p++)
    if (memcmp(p, needle, n) == 0) return p;
  return NULL;
}

const char *ncs_tclass_name(int tclass) {
  switch (tclass) {
  case NCS_TC_P2P: return "P2P";
  case NCS_TC_SHM: return "SHM";
  case NCS_TC_NET: return "NET";
  case NCS_TC_COLLNET: return "COLLNET";
  case NCS_TC_NVLS: return "NVLS";
  default: return "?";
  }
}

int ncs_nl_version_code(const char *text) {
  struct cur c = { text, text + strlen(text) };
  long long x, y, z;
  if (!get_num(&c, &x) || !eat(&c, ".") || !get_num(&c, &y) || !eat(&c, ".") || !get_num(&c, &z))
    return 0;
  if (x > 9 || y > 99 || z > 99) return 0;
  if (x < 2 || (x == 2 && y < 9)) return (int)(x * 1000 + y * 100 + z);
  return (int)(x * 10000 + y * 100 + z);
}

/* ---- wrappers and the NCCL prefix ---- */

/* "[2025-07-21 19:05:29] " or "[2025-07-21 19:05:29,473] " style timestamps. */
static int strip_timestamp(struct cur *c) {
  if (c->e - c->p < 12 || c->p[0] != '[') return 0;
  const char *p = c->p + 1;
  if (!(isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
        isdigit((unsigned char)p[3]) && p[4] == '-'))
    return 0;
  const char *q = memchr(p, ']', (size_t)(c->e - p));
  if (!q || q - p > 40) return 0;
  c->p = q + 1;
  skip_sp(c);
  return 1;
}
/* Open MPI "[1,N]<stdout>:" / "<stderr>:". */
static int strip_mpi(struct cur *c, int *rank) {
  struct cur t = *c;
  long long a, b;
  if (!eat(&t, "[") || !get_num(&t, &a) || !eat(&t, ",") || !get_num(&t, &b) || !eat(&t, "]")) return 0;
  if (!eat(&t, "<stdout>:") && !eat(&t, "<stderr>:")) return 0;
  *rank = (int)b;
  *c = t;
  return 1;
}
/* Ray "(pid=N) " or "(RayTrainWorker pid=N, ip=...) ". */
static int strip_ray(struct cur *c) {
  if (c->p >= c->e || *c->p != '(') return 0;
  const char *q = memchr(c->p, ')', (size_t)(c->e - c->p));
  if (!q || q - c->p > 120 || !find(c->p, q, "pid=")) return 0;
  c->p = q + 1;
  if (c->p < c->e && *c->p == ' ') c->p++;
  return 1;
}
/* "host:pid:tid" at c; fills the record and advances. */
static int parse_hpt(struct cur *c, struct ncs_nl_rec *r) {
  const char *p = c->p;
  const char *colon = NULL;
  for (const char *q = p; q < c->e && q - p < 200; q++) {
    if (*q == ' ' || *q == '\t') return 0;
    if (*q == ':') { colon = q; break; }
  }
  if (!colon || colon == p) return 0;
  struct cur t = { colon + 1, c->e };
  long long pid, tid;
  if (!get_num(&t, &pid) || !eat(&t, ":") || !get_num(&t, &tid)) return 0;
  if (t.p < t.e && *t.p != ' ') return 0;
  copy_str(r->host, sizeof r->host, p, (size_t)(colon - p));
  r->pid = (long)pid;
  r->tid = (long)tid;
  r->has_prefix = 1;
  *c = t;
  skip_sp(c);
  return 1;
}
/* "[dev] " */
static int parse_dev(struct cur *c, int *dev) {
  struct cur t = *c;
  long long d;
  if (!eat(&t, "[") || !get_num(&t, &d) || !eat(&t, "]")) return 0;
  *dev = (int)d;
  *c = t;
  skip_sp(c);
  return 1;
}
/* pdsh/DeepSpeed "host: " followed by a host:pid:tid prefix. */
static int strip_pdsh(struct cur *c, struct ncs_nl_rec *r) {
  const char *q = c->p;
  while (q < c->e && *q != ':' && *q != ' ' && q - c->p < 100) q++;
  if (q == c->p || q + 1 >= c->e || *q != ':' || q[1] != ' ') return 0;
  struct cur t = { q + 2, c->e };
  struct ncs_nl_rec probe;
  memset(&probe, 0, sizeof probe);
  if (!parse_hpt(&t, &probe)) return 0;
  (void)r;
  c->p = q + 2;
  return 1;
}

/* ---- message classifiers ---- */

/* Decimal digits in [p, e) (stops at the first non-digit), bounded. */
static int num_in(const char *p, const char *e) {
  struct cur c = { p, e };
  int v = -1;
  return get_int(&c, &v) ? v : -1;
}

static int parse_rank_tag(struct cur *c, int *rank, char *tag, size_t cap) {
  if (!get_int(c, rank)) return 0;
  tag[0] = 0;
  if (c->p < c->e && *c->p == '[') {
    const char *q = memchr(c->p, ']', (size_t)(c->e - c->p));
    if (!q || q - c->p > 30) return 0;
    copy_str(tag, cap, c->p + 1, (size_t)(q - c->p - 1));
    c->p = q + 1;
  }
  return 1;
}

/* Decodes "CLASS/detail" after "via ". */
static void parse_via(const char *p, const char *e, struct ncs_nl_transport *t) {
  while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
  t->net_dev = t->proxy = -1;
  if ((size_t)(e - p) >= 20 && memcmp(p, "direct shared memory", 20) == 0) { /* 2.3 .. 2.12 SHM */
    t->tclass = NCS_TC_SHM;
    copy_str(t->detail, sizeof t->detail, p, (size_t)(e - p));
    copy_str(t->mode, sizeof t->mode, "direct shared memory", 20);
    return;
  }
  const char *slash = memchr(p, '/', (size_t)(e - p));
  const char *cend = slash ? slash : e;
  size_t cl = (size_t)(cend - p);
  if (cl == 3 && !memcmp(p, "P2P", 3)) t->tclass = NCS_TC_P2P;
  else if (cl == 3 && !memcmp(p, "SHM", 3)) t->tclass = NCS_TC_SHM;
  else if (cl == 3 && !memcmp(p, "NET", 3)) t->tclass = NCS_TC_NET;
  else if (cl == 7 && !memcmp(p, "COLLNET", 7)) t->tclass = NCS_TC_COLLNET;
  else if (cl == 4 && !memcmp(p, "NVLS", 4)) t->tclass = NCS_TC_NVLS;
  else t->tclass = NCS_TC_UNKNOWN;
  const char *d = slash ? slash + 1 : e;
  copy_str(t->detail, sizeof t->detail, d, (size_t)(e - d));
  if (t->tclass == NCS_TC_P2P) {
    const char *s = memchr(d, '/', (size_t)(e - d));
    copy_str(t->mode, sizeof t->mode, d, (size_t)((s ? s : e) - d));
    for (const char *q = s; q && q < e; q = memchr(q + 1, '/', (size_t)(e - q - 1))) {
      struct cur w = { q + 1, e };
      if (starts(&w, "read")) t->flags |= NCS_TF_READ;
      if (starts(&w, "CE")) t->flags |= NCS_TF_CE;
    }
  } else if (t->tclass == NCS_TC_SHM) {
    copy_str(t->mode, sizeof t->mode, d, (size_t)(e - d));
    if (find(d, e, "CE")) t->flags |= NCS_TF_CE;
  } else if (t->tclass == NCS_TC_NET || t->tclass == NCS_TC_COLLNET) {
    /* name/dev[(proxy)][/GDRDMA[(PCI)]][/Shared]; the name may hold spaces. Peel from the right. */
    const char *q = e;
    for (;;) {
      if (q - d >= 7 && !memcmp(q - 7, "/Shared", 7)) { t->flags |= NCS_TF_SHARED; q -= 7; continue; }
      if (q - d >= 12 && !memcmp(q - 12, "/GDRDMA(PCI)", 12)) { t->flags |= NCS_TF_GDR | NCS_TF_GDR_PCI; q -= 12; continue; }
      if (q - d >= 7 && !memcmp(q - 7, "/GDRDMA", 7)) { t->flags |= NCS_TF_GDR; q -= 7; continue; }
      break;
    }
    if (q > d && q[-1] == ')') { /* PXN proxy rank */
      const char *o = q - 1;
      while (o > d && o[-1] != '(') o--;
      if (o > d && o[-1] == '(') {
        t->proxy = num_in(o, q);
        t->flags |= NCS_TF_PXN;
        q = o - 1;
      }
    }
    const char *ds = q;
    while (ds > d && isdigit((unsigned char)ds[-1])) ds--;
    if (ds < q && ds > d && ds[-1] == '/') {
      t->net_dev = num_in(ds, q);
      copy_str(t->mode, sizeof t->mode, d, (size_t)(ds - 1 - d));
    } else {
      const char *s = memchr(d, '/', (size_t)(q - d));
      copy_str(t->mode, sizeof t->mode, d, (size_t)((s ? s : q) - d));
    }
  } else {
    const char *s = memchr(d, '/', (size_t)(e - d));
    copy_str(t->mode, sizeof t->mode, d, (size_t)((s ? s : e) - d));
  }
}

/* "Ring 00 : ...", "Channel 00/0 : ...", "Coll 00 : ...", "CollNet 00/0 : ..." */
static int parse_channel_line(struct cur m, struct ncs_nl_rec *r) {
  int collnet = 0;
  if (eat(&m, "Channel ") || eat(&m, "Ring ")) collnet = 0;
  else if (eat(&m, "CollNet ") || eat(&m, "Coll ")) collnet = 1;
  else return 0;
  long long ch, sub = -1;
  if (!get_num(&m, &ch)) return 0;
  int has_sub = 0;
  if (eat(&m, "/")) { if (!get_num(&m, &sub)) return 0; has_sub = 1; }
  skip_sp(&m);
  if (!eat(&m, ":")) return 0;
  const char *via = find(m.p, m.e, " via ");
  if (via) {
    struct ncs_nl_transport *t = &r->u.t;
    memset(t, 0, sizeof *t);
    t->channel = (int)ch;
    t->conn = has_sub ? (int)sub : -1;
    t->from = t->to = -1;
    skip_sp(&m);
    struct cur head = { m.p, via };
    if (!parse_rank_tag(&head, &t->from, t->from_tag, sizeof t->from_tag)) return 0;
    skip_sp(&head);
    if (eat(&head, "->")) {
      skip_sp(&head);
      if (!parse_rank_tag(&head, &t->to, t->to_tag, sizeof t->to_tag)) return 0;
      skip_sp(&head);
    } else if (collnet) { /* "CollNet 00/0 : 0 [receive] via COLLNET/..." */
      t->to = t->from;
      t->from = -1;
      memcpy(t->to_tag, t->from_tag, sizeof t->to_tag);
      t->from_tag[0] = 0;
    } else {
      return 0;
    }
    if (eat(&head, "[send]")) t->dir = NCS_DIR_SEND;
    else if (eat(&head, "[receive]")) t->dir = NCS_DIR_RECV;
    skip_sp(&head);
    if (head.p != head.e) return 0;
    parse_via(via + 5, m.e, t);
    return r->kind = NCS_NL_TRANSPORT;
  }
  if (collnet) return 0;
  /* Ring order: "Channel 00/08 :    0   5   4 ..." (no arrows). GRAPH lines "Ring 02 : 2 -> 0 -> 1"
   * are neighbour triples, not orders: not kept. */
  if (!has_sub || find(m.p, m.e, "->")) return 0;
  struct ncs_nl_ring *g = &r->u.ring;
  g->channel = (int)ch;
  g->nchannels = (int)sub;
  g->nranks_listed = 0;
  for (;;) {
    skip_sp(&m);
    if (m.p >= m.e) break;
    int v;
    if (!get_int(&m, &v)) return 0;
    if (g->nranks_listed < NCS_NL_MAX_RING) g->ranks[g->nranks_listed++] = v;
  }
  if (g->nranks_listed == 0) return 0;
  return r->kind = NCS_NL_RING;
}

/* Finds "key " followed by a number in [p, e) as a whole word. */
static int kv_int(const char *p, const char *e, const char *key, long long *v) {
  size_t kl = strlen(key);
  const char *q = p;
  while ((q = find(q, e, key)) != NULL) {
    if ((q == p || q[-1] == ' ') && q + kl < e && q[kl] == ' ') {
      struct cur c = { q + kl + 1, e };
      int neg = eat(&c, "-");
      long long x;
      if (get_num(&c, &x)) { *v = neg ? -x : x; return 1; }
    }
    q++;
  }
  return 0;
}
static int kv_hex(const char *p, const char *e, const char *key, unsigned long long *v) {
  size_t kl = strlen(key);
  const char *q = p;
  while ((q = find(q, e, key)) != NULL) {
    if ((q == p || q[-1] == ' ') && q + kl < e && q[kl] == ' ') {
      struct cur c = { q + kl + 1, e };
      if (get_hex(&c, v)) return 1;
    }
    q++;
  }
  return 0;
}
static int kv_word(const char *p, const char *e, const char *key, char *out, size_t cap) {
  size_t kl = strlen(key);
  const char *q = p;
  while ((q = find(q, e, key)) != NULL) {
    if ((q == p || q[-1] == ' ') && q + kl < e && q[kl] == ' ') {
      const char *w = q + kl + 1, *we = w;
      while (we < e && *we != ' ') we++;
      copy_str(out, cap, w, (size_t)(we - w));
      return 1;
    }
    q++;
  }
  return 0;
}

static int parse_init(struct cur m, struct ncs_nl_rec *r) {
  const char *start = find(m.p, m.e, "- Init START"); /* a split's has no space: "key %d- Init START" */
  const char *done = find(m.p, m.e, "- Init COMPLETE");
  const char *comm = find(m.p, m.e, "comm 0x");
  if (!comm) return 0;
  int info = !start && !done && find(m.p, m.e, " nNodes ") != NULL;
  if (!start && !done && !info) return 0;
  struct ncs_nl_init *in = &r->u.init;
  memset(in, 0, sizeof *in);
  in->start = start != NULL;
  in->rank = in->nranks = in->cuda_dev = in->nvml_dev = -1;
  in->nnodes = in->local_ranks = in->local_rank = -1;
  if (comm > m.p) { /* API name, "ncclCommInitRankConfig comm 0x..." (2.23.4+) */
    const char *a = m.p;
    while (a < comm && *a == ' ') a++;
    if (comm - a > 1 && comm[-1] == ' ') copy_str(in->api, sizeof in->api, a, (size_t)(comm - 1 - a));
  }
  unsigned long long h;
  long long v;
  if (kv_hex(comm, m.e, "comm", &h)) in->comm_ptr = h;
  if (kv_hex(comm, m.e, "commId", &h)) in->comm_id = h;
  if (kv_int(comm, m.e, "rank", &v)) in->rank = (int)v;
  if (kv_int(comm, m.e, "nranks", &v) || kv_int(comm, m.e, "nRanks", &v)) in->nranks = (int)v;
  if (kv_int(comm, m.e, "cudaDev", &v)) in->cuda_dev = (int)v;
  if (kv_int(comm, m.e, "nvmlDev", &v)) in->nvml_dev = (int)v;
  kv_word(comm, m.e, "busId", in->bus_id, sizeof in->bus_id);
  if (info) {
    if (kv_int(comm, m.e, "nNodes", &v)) in->nnodes = (int)v;
    if (kv_int(comm, m.e, "localRanks", &v)) in->local_ranks = (int)v;
    if (kv_int(comm, m.e, "localRank", &v)) in->local_rank = (int)v;
    return r->kind = NCS_NL_COMMINFO;
  }
  return r->kind = NCS_NL_INIT;
}

static int parse_coll(struct cur m, struct ncs_nl_rec *r) {
  const char *colon = find(m.p, m.e, ": opCount ");
  if (!colon || colon - m.p > 22 || colon == m.p) return 0;
  for (const char *q = m.p; q < colon; q++) if (!isalpha((unsigned char)*q)) return 0;
  memset(&r->u.coll, 0, sizeof r->u.coll);
  copy_str(r->u.coll.op, sizeof r->u.coll.op, m.p, (size_t)(colon - m.p));
  unsigned long long h;
  long long v;
  struct cur c = { colon + 10, m.e };
  if (get_hex(&c, &h)) r->u.coll.op_count = h;
  if (kv_int(m.p, m.e, "count", &v)) r->u.coll.count = (unsigned long long)v;
  if (kv_int(m.p, m.e, "datatype", &v)) r->u.coll.datatype = (int)v;
  if (kv_int(m.p, m.e, "op", &v)) r->u.coll.redop = (int)v;
  r->u.coll.root = -1;
  if (kv_int(m.p, m.e, "root", &v)) r->u.coll.root = (int)v;
  if (kv_hex(m.p, m.e, "comm", &h)) r->u.coll.comm_ptr = h;
  const char *nr = find(m.p, m.e, "[nranks=");
  if (nr) { struct cur n = { nr + 8, m.e }; if (get_num(&n, &v)) r->u.coll.nranks = (int)v; }
  return r->kind = NCS_NL_COLL;
}

static int parse_channels(struct cur m, struct ncs_nl_rec *r) {
  if (!find(m.p, m.e, " coll channels,")) return 0;
  r->u.channels.coll = r->u.channels.collnet = r->u.channels.nvls = -1;
  r->u.channels.p2p = r->u.channels.p2p_per_peer = -1;
  /* "<n> <what> channels[ per peer]" items separated by ", " */
  const char *p = m.p;
  while (p < m.e) {
    const char *ie = find(p, m.e, ", ");
    if (!ie) ie = m.e;
    struct cur c = { p, ie };
    long long n;
    if (get_num(&c, &n)) {
      skip_sp(&c);
      if (starts(&c, "coll channels")) r->u.channels.coll = (int)n;
      else if (starts(&c, "collnet channels")) r->u.channels.collnet = (int)n;
      else if (starts(&c, "nvls channels")) r->u.channels.nvls = (int)n;
      else if (starts(&c, "p2p channels per peer")) r->u.channels.p2p_per_peer = (int)n;
      else if (starts(&c, "p2p channels")) r->u.channels.p2p = (int)n;
    }
    p = ie + 2;
  }
  return r->kind = NCS_NL_CHANNELS;
}

static int classify(struct cur m, struct ncs_nl_rec *r) {
  if (starts(&m, "Channel ") || starts(&m, "Ring ") || starts(&m, "Coll"))
    if (parse_channel_line(m, r)) return r->kind;
  if (eat(&m, "NCCL version ")) {
    const char *s = m.p;
    while (m.p < m.e && *m.p != ' ') m.p++;
    copy_str(r->u.version.text, sizeof r->u.version.text, s, (size_t)(m.p - s));
    r->u.version.code = ncs_nl_version_code(r->u.version.text);
    if (!r->u.version.code) return 0;
    return r->kind = NCS_NL_VERSION;
  }
  if (eat(&m, "Trees ")) {
    copy_str(r->u.tree.text, sizeof r->u.tree.text, m.p, (size_t)(m.e - m.p));
    return r->kind = NCS_NL_TREE;
  }
  if (eat(&m, "NVLS multicast support is ")) {
    r->u.nvls.available = !eat(&m, "not ");
    if (!eat(&m, "available on dev ")) return 0;
    long long d;
    r->u.nvls.dev = get_num(&m, &d) ? (int)d : -1;
    return r->kind = NCS_NL_NVLS;
  }
  if (eat(&m, "Using network ")) {
    memset(&r->u.netuse, 0, sizeof r->u.netuse);
    copy_str(r->u.netuse.name, sizeof r->u.netuse.name, m.p, (size_t)(m.e - m.p));
    return r->kind = NCS_NL_NETUSE;
  }
  if (starts(&m, "NET/IB : No device found") || starts(&m, "Failed to open libibverbs")) {
    memset(&r->u.netuse, 0, sizeof r->u.netuse);
    r->u.netuse.ib_missing = 1;
    return r->kind = NCS_NL_NETUSE;
  }
  {
    struct cur c = m;
    long long bytes;
    if (get_num(&c, &bytes) && eat(&c, " Bytes -> Algo ")) {
      int a, p;
      if (get_int(&c, &a) && eat(&c, " proto ") && get_int(&c, &p)) {
        r->u.algo.bytes = bytes;
        r->u.algo.algo = a;
        r->u.algo.proto = p;
        r->u.algo.time_us = 0;
        if (eat(&c, " time ")) {
          char buf[32];
          size_t n = (size_t)(c.e - c.p) < sizeof buf - 1 ? (size_t)(c.e - c.p) : sizeof buf - 1;
          memcpy(buf, c.p, n);
          buf[n] = 0;
          r->u.algo.time_us = strtod(buf, NULL);
        }
        return r->kind = NCS_NL_ALGO;
      }
    }
  }
  if (find(m.p, m.e, "Init ") && parse_init(m, r)) return r->kind;
  if (starts(&m, "comm 0x") && parse_init(m, r)) return r->kind;
  if (parse_channels(m, r)) return r->kind;
  if (parse_coll(m, r)) return r->kind;
  return 0;
}

int ncs_nl_parse(const char *line, size_t len, struct ncs_nl_rec *r) {
  memset(r, 0, offsetof(struct ncs_nl_rec, u));
  r->pid = r->tid = -1;
  r->dev = r->wrapper_rank = -1;
  r->kind = NCS_NL_NONE;
  if (!line) return 0;
  struct cur c = { line, line + len };
  while (c.e > c.p && (c.e[-1] == '\n' || c.e[-1] == '\r')) c.e--;
  /* Wrappers, outermost first, in any order and repeated. */
  for (int guard = 0; guard < 8; guard++) {
    int rk;
    if (strip_timestamp(&c)) continue;
    if (strip_mpi(&c, &rk)) { r->wrapper_rank = rk; continue; }
    if (strip_ray(&c)) continue;
    {
      struct cur t = c;
      long long n;
      if (eat(&t, "[") && get_num(&t, &n) && eat(&t, "] ") && !starts(&t, "NCCL ")) {
        /* "[155] host:pid:tid ..." global-rank wrapper (not a stripped "[dev] NCCL INFO") */
        struct cur u = t;
        struct ncs_nl_rec probe;
        memset(&probe, 0, sizeof probe);
        if (parse_hpt(&u, &probe)) { r->wrapper_rank = (int)n; c = t; continue; }
      }
    }
    if (!r->has_prefix && strip_pdsh(&c, r)) continue;
    break;
  }
  skip_sp(&c);
  struct cur save = c;
  if (parse_hpt(&c, r)) {
    parse_dev(&c, &r->dev);
  } else {
    c = save;
    parse_dev(&c, &r->dev); /* "[3] NCCL INFO ..." with the host stripped */
  }
  /* "NCCL INFO ", "NCCL WARN ", "file.cc:123 NCCL WARN ", "<ms> func:line NCCL TRACE ", "NCCL CALL " */
  const char *tag = find(c.p, c.e, "NCCL ");
  int warn = 0;
  if (tag && (tag == c.p || tag[-1] == ' ') && tag - c.p < 200) {
    struct cur t = { tag + 5, c.e };
    if (eat(&t, "INFO")) { if (tag != c.p) tag = NULL; }
    else if (eat(&t, "WARN")) warn = 1;
    else if (eat(&t, "TRACE") || eat(&t, "CALL")) { r->msg = t.p; r->msg_len = (size_t)(t.e - t.p); return 0; }
    else tag = NULL;
    if (tag) {
      if (warn) {
        const char *w = c.p, *we = tag;
        while (we > w && we[-1] == ' ') we--;
        copy_str(r->u.warn.where, sizeof r->u.warn.where, w, (size_t)(we - w));
      }
      c.p = t.p;
      skip_sp(&c);
    }
  }
  r->msg = c.p;
  r->msg_len = (size_t)(c.e - c.p);
  if (warn) {
    copy_str(r->u.warn.text, sizeof r->u.warn.text, c.p, (size_t)(c.e - c.p));
    return r->kind = NCS_NL_WARN;
  }
  if (c.p >= c.e) return 0;
  return classify(c, r);
}
