/* transport.h — what NCCL's debug log says about a job: the connections and the transport of
 * each, NCCL versions, communicator init lines, NVLS availability, networks, warnings.
 *
 * Contract: feed lines (from log files or from NCCL_LOG trace records) one at a time with
 * ncs_tmodel_line(); the model dedupes connections (the same connection printed twice counts
 * once) and keeps bounded lists elsewhere (warnings are counted beyond the first 8, versions kept for 16 processes). Memory
 * grows only with distinct connections. Output: JSON members into an open object, or a text
 * summary with a rank x rank transport matrix. Ownership: the model owns its arrays; call
 * ncs_tmodel_free(). */
#ifndef NCS_TRANSPORT_H
#define NCS_TRANSPORT_H
#include <stdint.h>
#include <stdio.h>
#include "base/json.h"
#include "io/nccllog.h"

struct ncs_tconn {
  char host[64];
  long pid;
  int channel, conn, from, to, dir, tclass, net_dev, proxy;
  unsigned flags;
  char from_tag[24], to_tag[24], detail[96], mode[48];
};
struct ncs_tver { char text[32]; int code; char host[64]; long pid; };
struct ncs_tinit { struct ncs_nl_init in; char host[64]; long pid; };
struct ncs_tring { int channel, nchannels, n; int *ranks; };       /* a distinct ring order */
struct ncs_talgo { long long bytes; int algo, proto; double time_us; };

#define NCS_TM_MAX_VERS 16
#define NCS_TM_MAX_WARN 8
#define NCS_TM_MAX_NETS 8
struct ncs_tmodel {
  struct ncs_tconn *conns; size_t nconns, cap;
  uint32_t *hash; size_t hcap;              /* open addressing: index+1 into conns, 0 empty */
  struct ncs_tver vers[NCS_TM_MAX_VERS]; int nvers;
  struct ncs_tinit *inits; size_t ninits, icap;
  int nvls_available, nvls_unavailable;
  char nets[NCS_TM_MAX_NETS][48]; int nnets; int ib_missing;
  struct { char where[64], text[200]; char host[64]; long pid; } warns[NCS_TM_MAX_WARN];
  int nwarns; long warns_total;
  long rings, trees, algos, colls, channel_lines;
  struct ncs_tring *ring_list; size_t nring_list, ring_cap;          /* at most 64 distinct */
  struct ncs_talgo *algo_list; size_t nalgo_list, algo_cap;          /* the first 64 */
  int chan_coll, chan_nvls, chan_p2p, chan_collnet;                  /* last channel summary, -1 none */
  char tree_text[200];                                               /* first "Trees" line */
  long lines, lines_used;
  long lines_nccl;                                                   /* lines NCCL wrote: its prefix, or recognised */
};

void ncs_tmodel_init(struct ncs_tmodel *m);
void ncs_tmodel_free(struct ncs_tmodel *m);
/* Parses and adds one line. Returns the line's kind (NCS_NL_*), or -1 when out of memory. */
int ncs_tmodel_line(struct ncs_tmodel *m, const char *line, size_t len);
/* Adds one connection (deduplicated). Returns 0, -1 when out of memory. */
int ncs_tmodel_add_conn(struct ncs_tmodel *m, const struct ncs_tconn *c);
/* The connection a parsed NCS_NL_TRANSPORT line describes. */
void ncs_tconn_of(const struct ncs_nl_rec *r, struct ncs_tconn *c);
/* Reads a whole log file ("-" = stdin). Returns 0, or -1 with errno set when it cannot be read. */
int ncs_tmodel_file(struct ncs_tmodel *m, const char *path);

/* The first version seen ("2.28.9+cuda13.0"), or NULL. */
const char *ncs_tmodel_version(const struct ncs_tmodel *m);
/* Number of distinct version codes seen. */
int ncs_tmodel_nversions(const struct ncs_tmodel *m);
/* Counts connections of class `tclass` (-1 = all). */
size_t ncs_tmodel_count(const struct ncs_tmodel *m, int tclass);

/* JSON members: "nccl_version", "nccl_versions", "transports", "summary", "inits", "rings",
 * "trees", "channels", "algorithms", "nvls", "networks", "warnings". */
void ncs_tmodel_json(const struct ncs_tmodel *m, struct ncs_json *j);
/* JSON array `key` of this model's connections only (used per rank by report). */
void ncs_tmodel_json_transports(const struct ncs_tmodel *m, struct ncs_json *j, const char *key);
/* Text: versions, counts per transport, the rank x rank matrix (up to 64 ranks), warnings. */
void ncs_tmodel_text(const struct ncs_tmodel *m, FILE *f);
/* The rank x rank matrix alone: cell = the classes seen for from -> to. */
void ncs_tmodel_matrix(const struct ncs_tmodel *m, FILE *f, const char *indent);
/* "P2P/CUMEM/read" style label of a connection into buf. */
const char *ncs_tconn_label(const struct ncs_tconn *c, char *buf, size_t cap);
#endif
