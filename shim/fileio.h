/* fileio.h — the shim's own descriptors, kept where the job cannot reach them (fileio.c). */
#ifndef NCS_SHIM_FILEIO_H
#define NCS_SHIM_FILEIO_H
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Starts the file thread (writer thread, before its first file); 0 when it runs. Without it
 * every ncs_fio_* call is the plain system call on the calling thread. */
__attribute__((visibility("hidden"))) int ncs_fio_start(void);
/* 1 while the shim's descriptors live in the file thread's private table (no job's close,
 * dup2 or exec can touch them, and no child inherits them). */
__attribute__((visibility("hidden"))) int ncs_fio_private(void);
/* The fork child: no file thread, and the parent's private descriptors are not in this
 * process; returns 1 when they were private (the caller forgets their numbers, never closes). */
__attribute__((visibility("hidden"))) int ncs_fio_atfork_child(void);

/* The calls the shim makes on its descriptors, each run on the file thread with libc's
 * convention (-1 and errno). The writer thread waits as long as a call takes; any other thread
 * (a job's, claiming a ring) gives up with ETIMEDOUT when the file thread stays busy with
 * another request for FIO_PATIENCE_MS, and never takes a signal while it waits. ncs_fio_open
 * moves the descriptor high when it is not private (ncs_fd_move_high). */
__attribute__((visibility("hidden"))) int ncs_fio_open(const char *path, int flags, mode_t mode);
__attribute__((visibility("hidden"))) int ncs_fio_close(int fd);
__attribute__((visibility("hidden"))) ssize_t ncs_fio_pwrite(int fd, const void *buf, size_t n, off_t off);
__attribute__((visibility("hidden"))) int ncs_fio_ftruncate(int fd, off_t len);
__attribute__((visibility("hidden"))) int ncs_fio_fallocate(int fd, int mode, off_t off, off_t len);
__attribute__((visibility("hidden"))) int ncs_fio_fstat(int fd, struct stat *st);
/* A file as the shim made it: device, inode, birth time (where the file system keeps one),
 * and as last seen: size and links (0: deleted). */
struct ncs_fio_ident {
  uint64_t dev, ino, size;
  int64_t btime_s;
  uint32_t btime_ns, nlink;
  int has_btime;
};
/* statx of fd: 0, or -1 when it fails or fd is not a regular file. */
__attribute__((visibility("hidden"))) int ncs_fio_identify(int fd, struct ncs_fio_ident *id);
/* 1 when a and b are the same file (device, inode, and b's birth time when b has one). */
__attribute__((visibility("hidden"))) int ncs_fio_same_file(const struct ncs_fio_ident *a, const struct ncs_fio_ident *b);
/* pwrite, run only when fd's file is still `want` (the same file, want->size bytes long, not
 * deleted), checked in the same visit of the file thread as the write: else -1 with errno
 * ESTALE and nothing written. */
__attribute__((visibility("hidden"))) ssize_t ncs_fio_pwrite_if(int fd, const void *buf, size_t n, off_t off,
                                                                const struct ncs_fio_ident *want);
/* ncs_fio_pwrite_if posted and not waited for (writer thread only, one at a time): 0 when the
 * file thread has it, -1 when there is none to ask (make the call itself). buf stays untouched
 * until ncs_fio_collect, which returns the write's answer (libc's convention), waiting for it
 * only if it is not served yet; every other request waits for the posted one first. */
__attribute__((visibility("hidden"))) int ncs_fio_post_pwrite_if(int fd, const void *buf, size_t n, off_t off,
                                                                 const struct ncs_fio_ident *want);
__attribute__((visibility("hidden"))) ssize_t ncs_fio_collect(void);
__attribute__((visibility("hidden"))) int ncs_fio_fchmod(int fd, mode_t mode);
/* linkat of the descriptor's unnamed file (O_TMPFILE) to path: AT_EMPTY_PATH, else through
 * /proc (fileio.c link_fd) */
__attribute__((visibility("hidden"))) int ncs_fio_link(int fd, const char *path);
__attribute__((visibility("hidden"))) void *ncs_fio_mmap(size_t len, int prot, int flags, int fd, off_t off);
/* Runs fn(arg) on the file thread in one visit and returns what it returns (-1: errno set
 * from the file thread's). The ncs_fio_* calls fn makes there are the plain system calls on the
 * file thread's own table: one visit for a sequence that would take one a call (a visit is
 * two wake-ups and two context switches). fn makes system calls and writes shim memory only
 * (no lock a job's thread may hold, no stdio); its ncs_debug lines are written by the caller
 * after the visit. Without a file thread: fn(arg) on the caller. Writer thread only. */
__attribute__((visibility("hidden"))) int ncs_fio_run(int (*fn)(void *), void *arg);
#endif
