/* elfnccl.h — how a program reaches NCCL, read from its ELF file: through libnccl.so (which the
 * preloaded shim interposes), with NCCL linked into it (static: only NCCL's profiler plugin
 * interface sees its calls), or neither (docs/PROFILER.md, "Static NCCL"; `ncclscope run`).
 *
 * Contract: ncs_elf_nccl(path, ...) reads the program and the libraries it needs (DT_NEEDED,
 * recursively, found as ld.so finds them: a name with a slash as is; else DT_RPATH when there
 * is no DT_RUNPATH, LD_LIBRARY_PATH, DT_RUNPATH, then the standard directories; $ORIGIN and
 * ${ORIGIN} expanded; ld.so.cache is not read), at most 512 objects. Verdict:
 *  - NCS_NCCL_DYNAMIC: one of them needs a libnccl.so* (the wrappers see its calls);
 *  - NCS_NCCL_STATIC: none does, and one of them defines ncclAllReduce or pncclAllReduce itself
 *    (in .symtab or .dynsym: NCCL's code is inside it);
 *  - NCS_NCCL_NONE: neither (NCCL may still be dlopen'ed later: the wrappers see that too);
 *  - NCS_NCCL_NOT_ELF: the program is not a readable 64-bit little-endian ELF file (a script).
 * `which` (size n, may be NULL) gets the object that decided (the one needing libnccl.so, or
 * defining NCCL). Only reads (mmap, read-only); a damaged file counts as not ELF, never a crash.
 * Thread-safe (no state). */
#ifndef NCS_ELFNCCL_H
#define NCS_ELFNCCL_H
#include <stddef.h>

enum ncs_elf_nccl { NCS_NCCL_NOT_ELF = -1, NCS_NCCL_NONE = 0, NCS_NCCL_DYNAMIC = 1, NCS_NCCL_STATIC = 2 };
enum ncs_elf_nccl ncs_elf_nccl(const char *path, char *which, size_t n);
#endif
