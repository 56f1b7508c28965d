/* elfnccl.c — how a program reaches NCCL, from its ELF file (contract: elfnccl.h). */
#include "io/elfnccl.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_OBJS 512

struct walk {
  char *path[MAX_OBJS];
  int n, next;
  int dynamic, statik;
  char which[PATH_MAX];
};

/* One mapped ELF file: its bytes and section headers, bounds-checked. */
struct elf {
  const unsigned char *b;
  size_t len;
  const Elf64_Shdr *sh;
  unsigned nsh;
};

static int in_file(const struct elf *e, uint64_t off, uint64_t size) { return off <= e->len && size <= e->len - off; }

static int elf_open(struct elf *e, const char *path) {
  memset(e, 0, sizeof *e);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) { close(fd); return -1; }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return -1;
  e->b = m;
  e->len = (size_t)st.st_size;
  const Elf64_Ehdr *h = m;
  if (memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != ELFDATA2LSB ||
      h->e_shentsize != sizeof(Elf64_Shdr) || !in_file(e, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr))) {
    munmap(m, e->len);
    return -1;
  }
  e->sh = (const Elf64_Shdr *)(e->b + h->e_shoff);
  e->nsh = h->e_shnum;
  return 0;
}

/* The NUL-terminated string at offset off of string table section s, or NULL. */
static const char *elf_str(const struct elf *e, unsigned s, uint64_t off) {
  if (s >= e->nsh || e->sh[s].sh_type != SHT_STRTAB || !in_file(e, e->sh[s].sh_offset, e->sh[s].sh_size) ||
      off >= e->sh[s].sh_size)
    return NULL;
  const char *p = (const char *)e->b + e->sh[s].sh_offset + off;
  return memchr(p, 0, e->sh[s].sh_size - off) ? p : NULL;
}

static int defines_nccl(const struct elf *e) {
  for (unsigned i = 0; i < e->nsh; i++) {
    const Elf64_Shdr *s = &e->sh[i];
    if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) || s->sh_entsize != sizeof(Elf64_Sym) ||
        !in_file(e, s->sh_offset, s->sh_size))
      continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(e->b + s->sh_offset);
    for (uint64_t k = 0; k < s->sh_size / sizeof *sym; k++) {
      if (sym[k].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC) continue;
      const char *n = elf_str(e, s->sh_link, sym[k].st_name);
      if (n && (!strcmp(n, "ncclAllReduce") || !strcmp(n, "pncclAllReduce"))) return 1;
    }
  }
  return 0;
}

static void add_path(struct walk *w, const char *p) {
  for (int i = 0; i < w->n; i++)
    if (!strcmp(w->path[i], p)) return;
  if (w->n < MAX_OBJS && (w->path[w->n] = strdup(p))) w->n++;
}

/* 1 when name is in a directory of list (':'-separated, $ORIGIN = origin): out gets its path. */
static int find_in(const char *list, const char *origin, const char *name, char *out, size_t n) {
  while (list && *list) {
    const char *end = strchr(list, ':');
    size_t len = end ? (size_t)(end - list) : strlen(list);
    char dir[PATH_MAX];
    size_t d = 0;
    for (size_t i = 0; i < len && d < sizeof dir - 1;) {
      if (!strncmp(list + i, "$ORIGIN", 7) && i + 7 <= len) { d += (size_t)snprintf(dir + d, sizeof dir - d, "%s", origin); i += 7; }
      else if (!strncmp(list + i, "${ORIGIN}", 9) && i + 9 <= len) { d += (size_t)snprintf(dir + d, sizeof dir - d, "%s", origin); i += 9; }
      else dir[d++] = list[i++];
      if (d >= sizeof dir) d = sizeof dir - 1;
    }
    dir[d] = 0;
    if (d && (size_t)snprintf(out, n, "%s/%s", dir, name) < n && access(out, R_OK) == 0) return 1;
    list = end ? end + 1 : NULL;
  }
  return 0;
}

static void visit(struct walk *w, const char *path) {
  struct elf e;
  if (elf_open(&e, path) != 0) return;
  if (!w->statik && defines_nccl(&e)) { w->statik = 1; if (!w->dynamic) snprintf(w->which, sizeof w->which, "%s", path); }
  char origin[PATH_MAX];
  if (!realpath(path, origin)) snprintf(origin, sizeof origin, "%s", path);
  char *slash = strrchr(origin, '/');
  if (slash) *slash = 0;
  for (unsigned i = 0; i < e.nsh; i++) {
    const Elf64_Shdr *s = &e.sh[i];
    if (s->sh_type != SHT_DYNAMIC || !in_file(&e, s->sh_offset, s->sh_size)) continue;
    const Elf64_Dyn *d = (const Elf64_Dyn *)(e.b + s->sh_offset);
    uint64_t nd = s->sh_size / sizeof *d;
    const char *rpath = NULL, *runpath = NULL;
    for (uint64_t k = 0; k < nd && d[k].d_tag != DT_NULL; k++) {
      if (d[k].d_tag == DT_RPATH) rpath = elf_str(&e, s->sh_link, d[k].d_un.d_val);
      if (d[k].d_tag == DT_RUNPATH) runpath = elf_str(&e, s->sh_link, d[k].d_un.d_val);
    }
    for (uint64_t k = 0; k < nd && d[k].d_tag != DT_NULL; k++) {
      if (d[k].d_tag != DT_NEEDED) continue;
      const char *name = elf_str(&e, s->sh_link, d[k].d_un.d_val);
      if (!name) continue;
      const char *base = strrchr(name, '/');
      base = base ? base + 1 : name;
      if (!strncmp(base, "libnccl.so", 10)) {
        if (!w->dynamic) snprintf(w->which, sizeof w->which, "%s", path);
        w->dynamic = 1;
        continue;
      }
      char found[PATH_MAX];
      if (strchr(name, '/')) { add_path(w, name); continue; }
      if ((!runpath && find_in(rpath, origin, name, found, sizeof found)) ||
          find_in(getenv("LD_LIBRARY_PATH"), origin, name, found, sizeof found) ||
          find_in(runpath, origin, name, found, sizeof found) ||
          find_in("/lib64:/usr/lib64:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib/aarch64-linux-gnu:"
                  "/usr/lib/aarch64-linux-gnu:/lib:/usr/lib:/usr/local/lib", origin, name, found, sizeof found))
        add_path(w, found);
    }
  }
  munmap((void *)e.b, e.len);
}

enum ncs_elf_nccl ncs_elf_nccl(const char *path, char *which, size_t n) {
  struct elf e;
  if (which && n) which[0] = 0;
  if (elf_open(&e, path) != 0) return NCS_NCCL_NOT_ELF;
  munmap((void *)e.b, e.len);
  struct walk *w = calloc(1, sizeof *w);
  if (!w) return NCS_NCCL_NONE;
  add_path(w, path);
  while (w->next < w->n) visit(w, w->path[w->next++]);
  enum ncs_elf_nccl r = w->dynamic ? NCS_NCCL_DYNAMIC : w->statik ? NCS_NCCL_STATIC : NCS_NCCL_NONE;
  if (which && n && r != NCS_NCCL_NONE) snprintf(which, n, "%s", w->which);
  for (int i = 0; i < w->n; i++) free(w->path[i]);
  free(w);
  return r;
}
