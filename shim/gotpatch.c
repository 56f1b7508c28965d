/* gotpatch.c — points one import of a library the shim loaded privately at a function of the
 * shim's, in that library only.
 *
 * Contract:
 *   - ncs_got_patch(handle, name, fn, &old) rewrites every GOT slot of the object behind
 *     `handle` (a dlopen handle) that the dynamic linker fills with the address of the symbol
 *     `name` (JUMP_SLOT and GLOB_DAT relocations, RELA format: x86-64 and aarch64), so that the
 *     object's calls to `name` reach `fn`. Returns the number of slots rewritten (0: the object
 *     does not import it), -1 when its dynamic section could not be read.
 *   - Only that object changes: the process's other objects, and dlsym, keep resolving `name`
 *     as before. A slot in the object's RELRO segment (read-only after relocation, e.g. under
 *     LD_BIND_NOW) is made writable for the store and read-only again.
 *   - Call it before anything else may call into the object (no other thread uses it yet), and
 *     inside the fork gate (it walks the loader's list with dl_iterate_phdr). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#if defined(__x86_64__)
#define SLOT_JUMP R_X86_64_JUMP_SLOT
#define SLOT_DATA R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define SLOT_JUMP R_AARCH64_JUMP_SLOT
#define SLOT_DATA R_AARCH64_GLOB_DAT
#endif

struct relro_ask { uintptr_t base; uintptr_t lo, hi; };
static int relro_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct relro_ask *q = arg;
  if (info->dlpi_addr != q->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      q->lo = q->base + info->dlpi_phdr[i].p_vaddr;
      q->hi = q->lo + info->dlpi_phdr[i].p_memsz;
    }
  return 1;
}

/* an address held in the dynamic section: glibc has made most of them absolute, some ports
 * leave them relative to the load address */
static uintptr_t dyn_ptr(uintptr_t v, uintptr_t base) { return v < base ? v + base : v; }

static int store_slot(uintptr_t slot, void *fn, const struct relro_ask *r) {
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t page = slot & ~(uintptr_t)(pg > 0 ? pg - 1 : 4095);
  int ro = slot >= r->lo && slot < r->hi;
  if (ro && mprotect((void *)page, (size_t)(pg > 0 ? pg : 4096), PROT_READ | PROT_WRITE) != 0) return -1;
  __atomic_store_n((void **)slot, fn, __ATOMIC_RELEASE);
  if (ro) mprotect((void *)page, (size_t)(pg > 0 ? pg : 4096), PROT_READ);
  return 0;
}

int ncs_got_patch(void *handle, const char *name, void *fn) {
#if !defined(SLOT_JUMP)
  (void)handle; (void)name; (void)fn;
  return -1;
#else
  struct link_map *lm = NULL;
  if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) return -1;
  uintptr_t base = (uintptr_t)lm->l_addr;
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const ElfW(Rela) *tabs[2] = {NULL, NULL};
  size_t sizes[2] = {0, 0};
  long pltrel = DT_RELA;
  for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
    case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(d->d_un.d_ptr, base); break;
    case DT_STRTAB: strtab = (const char *)dyn_ptr(d->d_un.d_ptr, base); break;
    case DT_JMPREL: tabs[0] = (const ElfW(Rela) *)dyn_ptr(d->d_un.d_ptr, base); break;
    case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
    case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
    case DT_RELA: tabs[1] = (const ElfW(Rela) *)dyn_ptr(d->d_un.d_ptr, base); break;
    case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
    default: break;
    }
  }
  if (!symtab || !strtab || pltrel != DT_RELA) return -1;
  struct relro_ask r = {base, 0, 0};
  dl_iterate_phdr(relro_cb, &r);
  int n = 0;
  for (int t = 0; t < 2; t++) {
    for (size_t i = 0; tabs[t] && i < sizes[t] / sizeof(ElfW(Rela)); i++) {
      const ElfW(Rela) *x = &tabs[t][i];
      unsigned long type = ELF64_R_TYPE(x->r_info);
      if (type != SLOT_JUMP && type != SLOT_DATA) continue;
      const ElfW(Sym) *s = &symtab[ELF64_R_SYM(x->r_info)];
      if (strcmp(strtab + s->st_name, name) != 0) continue;
      if (store_slot(base + x->r_offset, fn, &r) != 0) return -1;
      n++;
    }
  }
  return n;
#endif
}
