/* readcount.h — a debug count of how often each input file is read, so that a test can hold
 * every command to one read of each trace (docs/ARCHITECTURE.md, "Reads per file").
 *
 * Contract: off unless NCCLSCOPE_READ_COUNT names a file (read once, at the first count);
 * then each call counts one event for `path`, and when the process exits one line per path
 * is appended to that file: "<reads> <peeks> <path>". A read is a pass that decodes a file
 * (a trace's chunks, a rings file, a text NCCL log); a peek opens it for its header only (the
 * loader's clock origin and chunk sizes, doctor's trace-or-log check). Thread-safe; off, a
 * count costs one branch. Counting never changes what a command reads or prints. */
#ifndef NCS_READCOUNT_H
#define NCS_READCOUNT_H

void ncs_readcount_read(const char *path);
void ncs_readcount_peek(const char *path);
#endif
