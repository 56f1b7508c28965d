/* regfile.h — opening an input file for reading without ever blocking (issue 9 part 4).
 *
 * Contract: ncs_fopen_regular() opens `path` read-only with O_NONBLOCK (so a FIFO with no
 * writer, or a device, cannot stall the open), checks with fstat that it is a regular file,
 * then clears O_NONBLOCK and returns a stdio stream. Anything else (FIFO, socket, character or
 * block device, directory) is refused: NULL with errno set (EINVAL for a non-regular file) and,
 * when err is given, a message naming the path and what it is. ncs_regular_kind() names the
 * kind of a stat mode ("FIFO", "socket", ...) for such messages. */
#ifndef NCS_REGFILE_H
#define NCS_REGFILE_H
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

FILE *ncs_fopen_regular(const char *path, char *err, size_t errlen);
const char *ncs_regular_kind(mode_t mode);
#endif
