/* topo_text.h — the NVML double's machine description: the `nvidia-smi topo -m` text format
 * itself (so real outputs in tests/fixtures/topo/ are valid inputs), plus optional directives in
 * comment lines that real nvidia-smi never prints:
 *   # nvmldouble: name=<GPU name>           default name for every GPU
 *   # nvmldouble: gpu=<i> name=<...> bus=<0000:1a:00.0> gen=<g> width=<w>
 *   # nvmldouble: pcie gen=<g> width=<w>    default PCIe link for every GPU
 * Directive values run to the next " key=" or the end of the line.
 *
 * Contract: ncsd_topo_parse() reads GPU rows of the first matrix (columns GPU0..GPUn-1 come
 * first; NIC columns, affinity columns and damaged columns after them are ignored), cells
 * X, NV#, PIX, PXB, PHB, NODE, SYS (and SOC, the old name of SYS); a second matrix of P2P
 * status cells (OK, CNS, GNS, TNS, NS, DR, U), as `nvidia-smi topo -p2p r` prints, sets the
 * P2P read status. Indentation, tabs and CRLF are accepted. Returns 0, or -1 with a reason. */
#ifndef NCSD_TOPO_TEXT_H
#define NCSD_TOPO_TEXT_H

#define NCSD_MAX_GPUS 32

struct ncsd_gpu {
  char name[96];
  char bus_id[32];     /* "00000000:1A:00.0" */
  unsigned gen, width, gen_max, width_max;
};
struct ncsd_machine {
  int ngpus;
  struct ncsd_gpu gpu[NCSD_MAX_GPUS];
  int nv[NCSD_MAX_GPUS][NCSD_MAX_GPUS];      /* NVLink count per pair */
  int rel[NCSD_MAX_GPUS][NCSD_MAX_GPUS];     /* NVML topology level (0,10,20,30,40,50) */
  int p2p_read[NCSD_MAX_GPUS][NCSD_MAX_GPUS];/* nvmlGpuP2PStatus_t, 0 OK */
};

__attribute__((visibility("hidden"))) int ncsd_topo_parse(const char *text, struct ncsd_machine *m, char *why, int whylen);
__attribute__((visibility("hidden"))) int ncsd_topo_load(const char *path, struct ncsd_machine *m, char *why, int whylen);
#endif
