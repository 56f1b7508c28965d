/* regfile.c — non-blocking open of regular files only (contract in regfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/regfile.h"

const char *ncs_regular_kind(mode_t mode) {
  if (S_ISREG(mode)) return "regular file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "special file";
}

FILE *ncs_fopen_regular(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat sb;
  if (fd < 0) {
    if (err) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    if (err) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
    close(fd);
    errno = e;
    return NULL;
  }
  if (!S_ISREG(sb.st_mode)) {
    if (err) snprintf(err, errlen, "%s: not a regular file (a %s): not read", path, ncs_regular_kind(sb.st_mode));
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    if (err) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
    close(fd);
    errno = e;
  }
  return f;
}
