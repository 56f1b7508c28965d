/* metrics.c — placeholder; the ratio analysis (issue 3) lands here. */
#include "analysis.h"
const struct ncs_analysis ncs_analysis_metrics = {.name = "metrics"};
