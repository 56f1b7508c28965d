/* symbolize.h — names for the code addresses of a traced process, read after the run from the
 * ELF files its MODULE records name (docs/CLI.md, "Call sites").
 *
 * Contract: ncs_symbolize(s, path, build_id, offset, &out) names the return address `offset`
 * bytes past the module's load address (a CALLSITE frame): the function that holds the call
 * before it (offset - 1) from the file's .symtab, else its .dynsym, with the offset into it;
 * and the source file and line of that call from the file's DWARF line table, or from its
 * separate debug file (/usr/lib/debug/.build-id/xx/yyyy.debug), when the system has libdw
 * (elfutils' libdw.so.1, loaded with dlopen when first needed: no build dependency; without it
 * there are no lines, only names). The file is trusted only when it is the one the process ran:
 * a build id recorded in the trace (format 5.4) must equal the file's, else out.state is
 * NCS_SYM_CHANGED and nothing is read from it; an older trace has no build id to check
 * (NCS_SYM_UNCHECKED: names are given, marked so by the callers). A missing or unreadable file is
 * NCS_SYM_MISSING, a file that is not a 64-bit ELF NCS_SYM_NOT_ELF. Every file is opened once per
 * symbolizer and kept mapped until ncs_symbolizer_free; strings in `out` live as long. Only reads;
 * a damaged file gives no name, never a crash. One symbolizer per thread. */
#ifndef NCS_SYMBOLIZE_H
#define NCS_SYMBOLIZE_H
#include <stdint.h>

enum ncs_sym_state { NCS_SYM_OK, NCS_SYM_UNCHECKED, NCS_SYM_CHANGED, NCS_SYM_MISSING, NCS_SYM_NOT_ELF };

struct ncs_sym {
  enum ncs_sym_state state;
  const char *func;    /* NULL when no symbol holds the address */
  uint64_t func_off;   /* bytes from the function's start to the return address */
  const char *file;    /* source file, NULL without line information */
  int line;            /* 0 without line information */
};

struct ncs_symbolizer;
struct ncs_symbolizer *ncs_symbolizer_new(void);
void ncs_symbolizer_free(struct ncs_symbolizer *s);
/* Fills *out (always). build_id: the trace's hex string, "" or NULL when it recorded none. */
void ncs_symbolize(struct ncs_symbolizer *s, const char *path, const char *build_id, uint64_t offset,
                   struct ncs_sym *out);
/* "missing", "changed since the run (build id differs)", ... for a state other than OK. */
const char *ncs_sym_state_name(enum ncs_sym_state st);
/* 1 when libdw could be loaded (source lines available for files with DWARF). */
int ncs_symbolizer_has_lines(struct ncs_symbolizer *s);
#endif
