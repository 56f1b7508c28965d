/* symbolize.c — names for code addresses from ELF symbol tables and DWARF lines (contract:
 * symbolize.h). */
#include "io/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- libdw, through dlopen: the few entry points used, declared as elfutils' libdw.h has
 * them (Dwarf_Die is a public 32-byte struct of its ABI) ---- */
typedef struct { void *addr, *cu, *abbrev; long padding; } dw_die;
typedef void *(*dw_begin_fn)(int fd, int cmd); /* DWARF_C_READ = 0 */
typedef int (*dw_end_fn)(void *dbg);
typedef dw_die *(*dw_addrdie_fn)(void *dbg, uint64_t addr, dw_die *result);
typedef int (*dw_nextcu_fn)(void *dbg, uint64_t off, uint64_t *next, size_t *hsize, uint64_t *abbrev,
                            uint8_t *asize, uint8_t *osize);
typedef dw_die *(*dw_offdie_fn)(void *dbg, uint64_t off, dw_die *result);
typedef void *(*dw_getsrc_die_fn)(dw_die *cudie, uint64_t addr);
typedef const char *(*dw_linesrc_fn)(void *line, uint64_t *mtime, uint64_t *length);
typedef int (*dw_lineno_fn)(void *line, int *linep);
static struct {
  int tried, ok;
  dw_begin_fn begin; dw_end_fn end; dw_addrdie_fn addrdie; dw_nextcu_fn nextcu; dw_offdie_fn offdie;
  dw_getsrc_die_fn getsrc_die; dw_linesrc_fn linesrc; dw_lineno_fn lineno;
} dw;

static int dw_load(void) {
  if (dw.tried) return dw.ok;
  dw.tried = 1;
  void *h = dlopen("libdw.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return 0;
#define DW_SYM(field, name) (dw.field = (__typeof__(dw.field))dlsym(h, name)) != NULL
  dw.ok = DW_SYM(begin, "dwarf_begin") && DW_SYM(end, "dwarf_end") && DW_SYM(addrdie, "dwarf_addrdie") &&
          DW_SYM(nextcu, "dwarf_nextcu") && DW_SYM(offdie, "dwarf_offdie") &&
          DW_SYM(getsrc_die, "dwarf_getsrc_die") && DW_SYM(linesrc, "dwarf_linesrc") && DW_SYM(lineno, "dwarf_lineno");
#undef DW_SYM
  return dw.ok;
}

/* ---- one ELF file ---- */
struct fsym { uint64_t addr, size; const char *name; };
struct mod {
  char *path;
  enum ncs_sym_state state;   /* as opened (OK: its build id, if any, read) */
  char build_id[41];
  const unsigned char *b;
  size_t len;
  uint64_t base_vaddr;        /* lowest PT_LOAD, page-aligned: a trace offset + this = vaddr */
  struct fsym *sym;
  size_t nsym;
  int dw_fd;                  /* the file libdw reads, -1 none */
  void *dbg;                  /* libdw's handle, NULL without DWARF */
  int dw_tried;
};
struct ncs_symbolizer { struct mod *m; size_t n, cap; };

static int in_file(const struct mod *m, uint64_t off, uint64_t size) { return off <= m->len && size <= m->len - off; }

static int cmp_sym(const void *a, const void *b) {
  const struct fsym *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void read_build_id(struct mod *m, const Elf64_Ehdr *eh) {
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(m->b + eh->e_phoff);
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type != PT_NOTE || !in_file(m, ph[i].p_offset, ph[i].p_filesz)) continue;
    const unsigned char *p = m->b + ph[i].p_offset, *e = p + ph[i].p_filesz;
    while ((size_t)(e - p) >= sizeof(Elf64_Nhdr)) {
      const Elf64_Nhdr *n = (const Elf64_Nhdr *)p;
      uint64_t nsz = ((uint64_t)n->n_namesz + 3) & ~3ull, dsz = ((uint64_t)n->n_descsz + 3) & ~3ull;
      if (nsz + dsz > (uint64_t)(e - p) - sizeof *n) break;
      const unsigned char *name = p + sizeof *n, *desc = name + nsz;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        unsigned k = n->n_descsz < 20 ? n->n_descsz : 20;
        for (unsigned j = 0; j < k; j++) snprintf(m->build_id + 2 * j, 3, "%02x", desc[j]);
        return;
      }
      p = desc + dsz;
    }
  }
}

/* The function symbols of the section table's SHT_SYMTAB (else SHT_DYNSYM). */
static void read_symbols(struct mod *m, const Elf64_Ehdr *eh) {
  if (eh->e_shentsize != sizeof(Elf64_Shdr) || !in_file(m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) return;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(m->b + eh->e_shoff);
  for (int want = SHT_SYMTAB; ; want = SHT_DYNSYM) {
    for (unsigned i = 0; i < eh->e_shnum; i++) {
      if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym)) continue;
      const Elf64_Shdr *str = &sh[sh[i].sh_link];
      if (!in_file(m, sh[i].sh_offset, sh[i].sh_size) || !in_file(m, str->sh_offset, str->sh_size)) continue;
      const Elf64_Sym *s = (const Elf64_Sym *)(m->b + sh[i].sh_offset);
      size_t n = sh[i].sh_size / sizeof *s;
      free(m->sym);
      m->sym = calloc(n ? n : 1, sizeof *m->sym);
      m->nsym = 0;
      if (!m->sym) return;
      const char *strs = (const char *)(m->b + str->sh_offset);
      for (size_t k = 0; k < n; k++) {
        unsigned t = ELF64_ST_TYPE(s[k].st_info);
        if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s[k].st_shndx == SHN_UNDEF || !s[k].st_value ||
            s[k].st_name >= str->sh_size || !memchr(strs + s[k].st_name, 0, str->sh_size - s[k].st_name))
          continue;
        m->sym[m->nsym++] = (struct fsym){s[k].st_value, s[k].st_size, strs + s[k].st_name};
      }
      qsort(m->sym, m->nsym, sizeof *m->sym, cmp_sym);
      if (m->nsym) return;
    }
    if (want == SHT_DYNSYM) return;
  }
}

static void mod_open(struct mod *m) {
  m->dw_fd = -1;
  int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { m->state = NCS_SYM_MISSING; goto out; }
  if (st.st_size < (off_t)sizeof(Elf64_Ehdr)) { m->state = NCS_SYM_NOT_ELF; goto out; }
  void *b = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (b == MAP_FAILED) { m->state = NCS_SYM_MISSING; goto out; }
  m->b = b;
  m->len = (size_t)st.st_size;
  const Elf64_Ehdr *eh = b;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_phentsize != sizeof(Elf64_Phdr) ||
      !in_file(m, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
    m->state = NCS_SYM_NOT_ELF;
    goto out;
  }
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(m->b + eh->e_phoff);
  uint64_t lo = UINT64_MAX;
  for (unsigned i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lo) lo = ph[i].p_vaddr;
  m->base_vaddr = lo == UINT64_MAX ? 0 : lo & ~0xfffull;
  read_build_id(m, eh);
  read_symbols(m, eh);
  m->state = NCS_SYM_OK;
  m->dw_fd = fd; /* libdw reads it later, if asked */
  return;
out:
  if (fd >= 0) close(fd);
}

/* libdw's handle on the module's DWARF: the file's own, else its separate debug file. */
static void *mod_dwarf(struct mod *m) {
  if (m->dw_tried) return m->dbg;
  m->dw_tried = 1;
  if (m->dw_fd < 0 || !dw_load()) return NULL;
  m->dbg = dw.begin(m->dw_fd, 0);
  if (!m->dbg && strlen(m->build_id) > 2) {
    char p[128];
    snprintf(p, sizeof p, "/usr/lib/debug/.build-id/%.2s/%s.debug", m->build_id, m->build_id + 2);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      close(m->dw_fd);
      m->dw_fd = fd;
      m->dbg = dw.begin(fd, 0);
    }
  }
  return m->dbg;
}

static void *line_of(void *dbg, uint64_t addr) {
  dw_die cu;
  if (dw.addrdie(dbg, addr, &cu)) return dw.getsrc_die(&cu, addr);
  /* no .debug_aranges: ask each compilation unit (bounded) */
  uint64_t off = 0, next;
  size_t hsize;
  for (int k = 0; k < 4096 && dw.nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0; k++, off = next) {
    void *l = dw.offdie(dbg, off + hsize, &cu) ? dw.getsrc_die(&cu, addr) : NULL;
    if (l) return l;
  }
  return NULL;
}

struct ncs_symbolizer *ncs_symbolizer_new(void) { return calloc(1, sizeof(struct ncs_symbolizer)); }

void ncs_symbolizer_free(struct ncs_symbolizer *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    struct mod *m = &s->m[i];
    if (m->dbg) dw.end(m->dbg);
    if (m->dw_fd >= 0) close(m->dw_fd);
    if (m->b) munmap((void *)m->b, m->len);
    free(m->sym);
    free(m->path);
  }
  free(s->m);
  free(s);
}

int ncs_symbolizer_has_lines(struct ncs_symbolizer *s) { (void)s; return dw_load(); }

static struct mod *mod_get(struct ncs_symbolizer *s, const char *path) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->m[i].path, path)) return &s->m[i];
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct mod *p = realloc(s->m, cap * sizeof *p);
    if (!p) return NULL;
    s->m = p;
    s->cap = cap;
  }
  struct mod *m = &s->m[s->n];
  memset(m, 0, sizeof *m);
  if (!(m->path = strdup(path))) return NULL;
  s->n++;
  mod_open(m);
  return m;
}

void ncs_symbolize(struct ncs_symbolizer *s, const char *path, const char *build_id, uint64_t offset,
                   struct ncs_sym *out) {
  memset(out, 0, sizeof *out);
  struct mod *m = s && path && *path ? mod_get(s, path) : NULL;
  if (!m) { out->state = NCS_SYM_MISSING; return; }
  out->state = m->state;
  if (m->state != NCS_SYM_OK) return;
  if (!build_id || !*build_id) out->state = NCS_SYM_UNCHECKED;
  else if (strcmp(build_id, m->build_id) != 0) { out->state = NCS_SYM_CHANGED; return; }
  if (!offset) return;
  uint64_t at = m->base_vaddr + offset - 1; /* inside the call instruction */
  size_t lo = 0, hi = m->nsym;
  while (lo < hi) { /* the last symbol starting at or before `at` */
    size_t mid = (lo + hi) / 2;
    if (m->sym[mid].addr <= at) lo = mid + 1; else hi = mid;
  }
  if (lo && (m->sym[lo - 1].size == 0 || at < m->sym[lo - 1].addr + m->sym[lo - 1].size)) {
    out->func = m->sym[lo - 1].name;
    out->func_off = at + 1 - m->sym[lo - 1].addr;
  }
  void *dbg = mod_dwarf(m), *l = dbg ? line_of(dbg, at) : NULL;
  int line = 0;
  if (l && dw.lineno(l, &line) == 0 && line > 0) {
    out->file = dw.linesrc(l, NULL, NULL);
    out->line = out->file ? line : 0;
  }
}

const char *ncs_sym_state_name(enum ncs_sym_state st) {
  switch (st) {
  case NCS_SYM_OK: return "ok";
  case NCS_SYM_UNCHECKED: return "not checked (the trace has no build id)";
  case NCS_SYM_CHANGED: return "changed since the run (build id differs)";
  case NCS_SYM_MISSING: return "missing";
  case NCS_SYM_NOT_ELF: return "not an ELF file";
  }
  return "?";
}
