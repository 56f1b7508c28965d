/* nd_logstub.c — weak, silent stand-ins for the log/transport side of double_log.h, so the
 * NCCL double links and runs before (or without) debug.c and transport.c.
 *
 * Contract: every function here is weak and does nothing; a strong definition in
 * debug.c/transport.c replaces it at link time. */
#include "double_log.h"

__attribute__((weak)) void ncclD_info(unsigned subsys, int dev, const char *fmt, ...) {}
__attribute__((weak)) void ncclD_warn(const char *file, int line, int dev, const char *fmt, ...) {}
__attribute__((weak)) void ncclD_version_banner(int version_code) {}
__attribute__((weak)) void ncclD_log_init(const struct ncclD_comm_view *v) {}
__attribute__((weak)) void ncclD_log_connect(const struct ncclD_comm_view *v) {}
