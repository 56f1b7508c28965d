/* transport_render.h — report's transports and topology (analysis/transport_report.h) as text
 * and JSON. Text: per communicator its connection counts and rank x rank matrix (8 ranks or
 * fewer, or `detail`), per host the topology in `nvidia-smi topo -m` form with the transports
 * NCCL chose overlaid (one host, or `detail`). JSON: top-level "topology", "transport_matrices",
 * "transport_lines_unattributed"; per rank "transports" and "nccl_log_version" (docs/JSON.md). */
#ifndef NCS_TRANSPORT_RENDER_H
#define NCS_TRANSPORT_RENDER_H
#include <stdio.h>
#include "base/json.h"
#include "analysis/transport_report.h"
#include "model/commnames.h"

/* names: the job's communicator names (NULL: none) */
void ncs_transport_print_text(const struct ncs_transport_result *r, FILE *out, int detail, const struct ncs_commnames *names);
void ncs_transport_print_json(const struct ncs_transport_result *r, struct ncs_json *j, const struct ncs_commnames *names);
void ncs_transport_print_rank_json(const struct ncs_transport_result *r, struct ncs_json *j, int file);
#endif
