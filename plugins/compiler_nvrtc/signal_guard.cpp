// Points libnvrtc's `signal` / `sigaction` imports at versions that leave SIGINT and SIGTERM be.
#include "signal_guard.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <tuple>

namespace cuplug::plugins {
namespace {

#if __ELF_NATIVE_CLASS == 64
std::size_t relocation_symbol(ElfW(Xword) info) { return ELF64_R_SYM(info); }
#else
std::size_t relocation_symbol(ElfW(Word) info) { return ELF32_R_SYM(info); }
#endif

bool kept_signal(int sig) { return sig == SIGINT || sig == SIGTERM; }

// What libnvrtc calls instead of signal(): for SIGINT and SIGTERM it reports the handler in place
// and changes nothing (EDG asks "is it SIG_IGN?", installs its own, later puts the old one back).
sighandler_t nvrtc_signal(int sig, sighandler_t handler) {
  if (!kept_signal(sig))
    return ::signal(sig, handler);
  struct sigaction now {};
  if (::sigaction(sig, nullptr, &now) != 0)
    return SIG_ERR;
  if ((now.sa_flags & SA_SIGINFO) != 0)
    return reinterpret_cast<sighandler_t>(now.sa_sigaction);
  return now.sa_handler;
}

int nvrtc_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (kept_signal(sig))
    return ::sigaction(sig, nullptr, old);
  return ::sigaction(sig, act, old);
}

struct found_object {
  const void *symbol = nullptr;
  ElfW(Addr) base = 0;
  const ElfW(Phdr) *phdr = nullptr;
  ElfW(Half) phnum = 0;
};

int find_object(struct dl_phdr_info *info, std::size_t, void *data) {
  auto *f = static_cast<found_object *>(data);
  const auto at = reinterpret_cast<ElfW(Addr)>(f->symbol);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &p = info->dlpi_phdr[i];
    const ElfW(Addr) start = info->dlpi_addr + p.p_vaddr;
    if (p.p_type == PT_LOAD && at >= start && at < start + p.p_memsz) {
      f->base = info->dlpi_addr;
      f->phdr = info->dlpi_phdr;
      f->phnum = info->dlpi_phnum;
      return 1;
    }
  }
  return 0;
}

// Writes `value` into the pointer slot at `slot`, lifting RELRO's read-only mapping for it.
bool write_slot(ElfW(Addr) slot, void *value, bool read_only) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto *first = reinterpret_cast<void *>(slot & ~(page - 1));
  const std::size_t length = slot + sizeof(void *) - reinterpret_cast<std::uintptr_t>(first);
  if (read_only && ::mprotect(first, length, PROT_READ | PROT_WRITE) != 0)
    return false;
  __atomic_store_n(reinterpret_cast<void **>(slot), value, __ATOMIC_SEQ_CST);
  if (read_only)
    ::mprotect(first, length, PROT_READ);
  return true;
}

std::string patch(const void *symbol) {
  found_object f;
  f.symbol = symbol;
  if (::dl_iterate_phdr(&find_object, &f) == 0)
    return "the loaded libnvrtc was not found among the process's objects";
  const ElfW(Dyn) *dynamic = nullptr;
  ElfW(Addr) relro_start = 0, relro_end = 0;
  for (ElfW(Half) i = 0; i < f.phnum; ++i) {
    if (f.phdr[i].p_type == PT_DYNAMIC)
      dynamic = reinterpret_cast<const ElfW(Dyn) *>(f.base + f.phdr[i].p_vaddr);
    if (f.phdr[i].p_type == PT_GNU_RELRO) {
      relro_start = f.base + f.phdr[i].p_vaddr;
      relro_end = relro_start + f.phdr[i].p_memsz;
    }
  }
  if (dynamic == nullptr)
    return "libnvrtc has no dynamic section";
  // glibc relocates these addresses in place; other loaders leave them relative to the base.
  auto address = [&](ElfW(Addr) a) { return a < f.base ? a + f.base : a; };
  ElfW(Addr) jmprel = 0, rela = 0, symtab = 0, strtab = 0;
  std::size_t jmprel_size = 0, rela_size = 0, relative_count = 0;
  ElfW(Sxword) pltrel = DT_RELA;
  for (const ElfW(Dyn) *d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
    case DT_JMPREL:
      jmprel = address(d->d_un.d_ptr);
      break;
    case DT_PLTRELSZ:
      jmprel_size = d->d_un.d_val;
      break;
    case DT_PLTREL:
      pltrel = static_cast<ElfW(Sxword)>(d->d_un.d_val);
      break;
    case DT_RELA:
      rela = address(d->d_un.d_ptr);
      break;
    case DT_RELASZ:
      rela_size = d->d_un.d_val;
      break;
    case DT_RELACOUNT: // the R_*_RELATIVE entries, first in DT_RELA: no symbol, nothing to patch
      relative_count = d->d_un.d_val;
      break;
    case DT_SYMTAB:
      symtab = address(d->d_un.d_ptr);
      break;
    case DT_STRTAB:
      strtab = address(d->d_un.d_ptr);
      break;
    default:
      break;
    }
  }
  if (pltrel != DT_RELA || symtab == 0 || strtab == 0)
    return "libnvrtc's relocations are not in the expected (RELA) form";
  const auto *symbols = reinterpret_cast<const ElfW(Sym) *>(symtab);
  const auto *names = reinterpret_cast<const char *>(strtab);
  int patched = 0;
  // libnvrtc has hundreds of thousands of relative relocations: reading them cost a process's
  // first compile (or first compile-cache hit) about 0.2 ms; DT_RELACOUNT says how many to skip.
  for (auto [table, size, first] : {std::tuple{jmprel, jmprel_size, std::size_t{0}},
                                    std::tuple{rela, rela_size, relative_count}}) {
    const auto *r = reinterpret_cast<const ElfW(Rela) *>(table);
    for (std::size_t i = first; table != 0 && i < size / sizeof(ElfW(Rela)); ++i) {
      const std::size_t index = relocation_symbol(r[i].r_info);
      if (index == 0 || r[i].r_addend != 0)
        continue;
      const char *name = names + symbols[index].st_name;
      void *replacement = nullptr;
      if (std::strcmp(name, "signal") == 0 || std::strcmp(name, "bsd_signal") == 0)
        replacement = reinterpret_cast<void *>(&nvrtc_signal);
      else if (std::strcmp(name, "sigaction") == 0)
        replacement = reinterpret_cast<void *>(&nvrtc_sigaction);
      if (replacement == nullptr)
        continue;
      const ElfW(Addr) slot = f.base + r[i].r_offset;
      if (!write_slot(slot, replacement, slot >= relro_start && slot < relro_end))
        return "libnvrtc's import table could not be made writable";
      ++patched;
    }
  }
  return patched > 0 ? std::string() : "libnvrtc imports neither signal nor sigaction";
}

} // namespace

std::string keep_nvrtc_off_interrupt_signals(const void *symbol_in_nvrtc) {
  static std::once_flag once;
  static std::string result;
  std::call_once(once, [&] { result = patch(symbol_in_nvrtc); });
  return result;
}

} // namespace cuplug::plugins
