// Reads binary module images: sm_90 cubins (kernels, parameter layout from .nv.info, variables
// from the symbol table), fatbins (their sm_90 cubin or uncompressed PTX) and the fake linker's
// output; recognises an image by its first bytes.
#include "module_image.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace fake {
namespace {

constexpr unsigned em_cuda = 190;
constexpr unsigned sto_cuda_entry = 0x10;
constexpr uint32_t fatbin_magic = 0xBA55ED50;
constexpr char linked_magic[] = "FAKECUDA-LINKED\n";

// .nv.info attribute formats and the attributes the fake reads.
enum : uint8_t { eifmt_nval = 1, eifmt_bval = 2, eifmt_hval = 3, eifmt_sval = 4 };
enum : uint8_t {
  eiattr_max_threads = 0x05,
  eiattr_reqntid = 0x10,
  eiattr_frame_size = 0x11,
  eiattr_kparam_info = 0x17,
  eiattr_cbank_param_size = 0x19,
  eiattr_regcount = 0x2f,
};

template <class T> T read(const unsigned char *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

load_result bad_image(const std::string &why) {
  return {CUDA_ERROR_INVALID_IMAGE, "fake CUDA driver: " + why + "\n"};
}

// Calls f(attribute, data, size) for each record of an .nv.info section.
template <class F> void for_each_attribute(const unsigned char *p, size_t size, F f) {
  size_t i = 0;
  while (i + 2 <= size) {
    uint8_t format = p[i], attribute = p[i + 1];
    i += 2;
    if (format == eifmt_sval) {
      if (i + 2 > size)
        return;
      uint16_t len = read<uint16_t>(p + i);
      i += 2;
      if (i + len > size)
        return;
      f(attribute, p + i, size_t(len));
      i += len;
    } else if (format == eifmt_hval || format == eifmt_bval || format == eifmt_nval) {
      if (i + 2 > size)
        return;
      f(attribute, p + i, size_t(2));
      i += 2;
    } else {
      return;
    }
  }
}

} // namespace

load_result read_cubin(const unsigned char *d, size_t size, image_info &out) {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(d, ELFMAG, SELFMAG) != 0)
    return bad_image("not an ELF file");
  auto eh = read<Elf64_Ehdr>(d);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != em_cuda)
    return bad_image("not a CUDA cubin (ELF machine " + std::to_string(eh.e_machine) + ")");
  unsigned arch = eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
  if (arch != 90)
    return {CUDA_ERROR_NO_BINARY_FOR_GPU, "fake CUDA driver: cubin is for sm_" +
                                              std::to_string(arch) +
                                              ", the device is compute capability 9.0\n"};
  if (eh.e_shoff == 0 || eh.e_shoff + size_t(eh.e_shnum) * sizeof(Elf64_Shdr) > size ||
      eh.e_shstrndx >= eh.e_shnum)
    return bad_image("truncated cubin");
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (unsigned i = 0; i < eh.e_shnum; ++i)
    sections[i] = read<Elf64_Shdr>(d + eh.e_shoff + i * sizeof(Elf64_Shdr));
  for (const auto &s : sections)
    if (s.sh_type != SHT_NOBITS && s.sh_offset + s.sh_size > size)
      return bad_image("truncated cubin");
  auto name_in = [&](const Elf64_Shdr &strtab, uint32_t offset) -> std::string {
    if (offset >= strtab.sh_size)
      return {};
    const char *p = reinterpret_cast<const char *>(d + strtab.sh_offset + offset);
    return std::string(p, strnlen(p, strtab.sh_size - offset));
  };
  std::vector<std::string> section_names;
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < sections.size(); ++i) {
    section_names.push_back(name_in(sections[eh.e_shstrndx], sections[i].sh_name));
    by_name[section_names.back()] = i;
  }
  const Elf64_Shdr *symtab = nullptr;
  for (const auto &s : sections)
    if (s.sh_type == SHT_SYMTAB)
      symtab = &s;
  if (!symtab || symtab->sh_link >= sections.size())
    return bad_image("cubin has no symbol table");
  const Elf64_Shdr &strtab = sections[symtab->sh_link];
  size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);

  // Registers and stack frames per kernel symbol, from the module-wide .nv.info.
  std::map<uint32_t, int> regs;
  std::map<uint32_t, size_t> frames;
  if (auto it = by_name.find(".nv.info"); it != by_name.end()) {
    const auto &s = sections[it->second];
    for_each_attribute(d + s.sh_offset, s.sh_size,
                       [&](uint8_t a, const unsigned char *p, size_t n) {
                         if (n != 8)
                           return;
                         if (a == eiattr_regcount)
                           regs[read<uint32_t>(p)] = int(read<uint32_t>(p + 4));
                         if (a == eiattr_frame_size)
                           frames[read<uint32_t>(p)] = read<uint32_t>(p + 4);
                       });
  }

  bool reserved_shared = false;
  for (size_t i = 0; i < nsyms; ++i) {
    auto sym = read<Elf64_Sym>(d + symtab->sh_offset + i * sizeof(Elf64_Sym));
    if (name_in(strtab, sym.st_name).rfind(".nv.reservedSmem", 0) == 0)
      reserved_shared = true;
  }

  image_info info;
  info.binary_version = 90;
  info.ptx_version = 90;
  for (size_t i = 0; i < nsyms; ++i) {
    auto sym = read<Elf64_Sym>(d + symtab->sh_offset + i * sizeof(Elf64_Sym));
    std::string name = name_in(strtab, sym.st_name);
    unsigned type = ELF64_ST_TYPE(sym.st_info);
    if (type == STT_FUNC && (sym.st_other & sto_cuda_entry)) {
      kernel_info k;
      k.name = name;
      if (auto r = regs.find(uint32_t(i)); r != regs.end())
        k.num_regs = r->second;
      if (auto f = frames.find(uint32_t(i)); f != frames.end())
        k.local_bytes = f->second;
      std::vector<std::pair<unsigned, kernel_param>> params;
      if (auto it = by_name.find(".nv.info." + name); it != by_name.end()) {
        const auto &s = sections[it->second];
        for_each_attribute(
            d + s.sh_offset, s.sh_size, [&](uint8_t a, const unsigned char *p, size_t n) {
              if (a == eiattr_kparam_info && n == 12) {
                unsigned ordinal = read<uint16_t>(p + 4);
                size_t offset = read<uint16_t>(p + 6);
                size_t bytes = (read<uint32_t>(p + 8) >> 18) & 0x3fff;
                params.push_back({ordinal, {offset, bytes}});
              } else if (a == eiattr_cbank_param_size) {
                k.param_bytes = read<uint16_t>(p);
              } else if ((a == eiattr_max_threads || a == eiattr_reqntid) && n == 12) {
                unsigned x = read<uint32_t>(p), y = read<uint32_t>(p + 4),
                         z = read<uint32_t>(p + 8);
                if (a == eiattr_max_threads)
                  k.maxntid = x * y * z;
                else
                  k.reqntid[0] = x, k.reqntid[1] = y, k.reqntid[2] = z;
              }
            });
      }
      std::sort(params.begin(), params.end(),
                [](const auto &a, const auto &b) { return a.first < b.first; });
      for (auto &[ordinal, p] : params) {
        k.params.push_back(p);
        k.param_bytes = std::max(k.param_bytes, p.offset + p.size);
      }
      if (auto it = by_name.find(".nv.shared." + name); it != by_name.end()) {
        size_t shared = sections[it->second].sh_size;
        size_t reserved = reserved_shared ? 1024 : 0;
        k.static_shared = shared > reserved ? shared - reserved : 0;
      }
      info.kernels.push_back(std::move(k));
    } else if (type == STT_OBJECT && sym.st_shndx < sections.size() && sym.st_size > 0) {
      const std::string &sec = section_names[sym.st_shndx];
      bool variable = sec.rfind(".nv.global", 0) == 0 ||
                      (sec.rfind(".nv.constant", 0) == 0 && sec.rfind(".nv.constant0", 0) != 0);
      if (!variable)
        continue;
      global_info g;
      g.name = name;
      g.size = sym.st_size;
      g.constant = sec.rfind(".nv.constant", 0) == 0;
      const auto &s = sections[sym.st_shndx];
      if (s.sh_type == SHT_PROGBITS && sym.st_value + sym.st_size <= s.sh_size) {
        const unsigned char *p = d + s.sh_offset + sym.st_value;
        g.init.assign(p, p + sym.st_size);
      }
      info.globals.push_back(std::move(g));
    }
  }
  for (auto &k : info.kernels)
    out.kernels.push_back(std::move(k));
  for (auto &g : info.globals)
    out.globals.push_back(std::move(g));
  return {};
}

load_result read_fatbin(const unsigned char *d, size_t size, image_info &out) {
  if (size < 16 || read<uint32_t>(d) != fatbin_magic)
    return bad_image("not a fatbin");
  size_t header = read<uint16_t>(d + 6);
  size_t end = std::min(size, header + size_t(read<uint64_t>(d + 8)));
  const unsigned char *ptx = nullptr;
  size_t ptx_size = 0;
  for (size_t off = header; off + 32 <= end;) {
    unsigned kind = read<uint16_t>(d + off);
    size_t entry_header = read<uint32_t>(d + off + 4);
    size_t payload = size_t(read<uint64_t>(d + off + 8));
    unsigned arch = read<uint32_t>(d + off + 28);
    const unsigned char *p = d + off + entry_header;
    if (off + entry_header + payload > end)
      break;
    if (kind == 2 && arch == 90 && payload >= 4 && std::memcmp(p, ELFMAG, SELFMAG) == 0)
      return read_cubin(p, payload, out);
    if (kind == 1 && arch <= 90 && payload > 8) { // compressed PTX has no readable .version
      std::string head(reinterpret_cast<const char *>(p), std::min<size_t>(payload, 4096));
      if (head.find(".version") != std::string::npos)
        ptx = p, ptx_size = payload;
    }
    off += entry_header + payload;
  }
  if (ptx) {
    std::string text(reinterpret_cast<const char *>(ptx),
                     strnlen(reinterpret_cast<const char *>(ptx), ptx_size));
    return parse_ptx(text, out);
  }
  return {CUDA_ERROR_NO_BINARY_FOR_GPU,
          "fake CUDA driver: the fatbin holds no sm_90 cubin and no uncompressed PTX\n"};
}

std::string linked_image(const std::vector<link_input> &inputs) {
  std::string body;
  for (const auto &in : inputs) {
    const char *tag = in.kind == link_input::ptx     ? "ptx "
                      : in.kind == link_input::cubin ? "elf "
                                                     : "fat ";
    body += tag + std::to_string(in.data.size()) + "\n" + in.data;
  }
  return linked_magic + std::to_string(body.size()) + "\n" + body;
}

namespace {
load_result read_linked(const char *image, image_info &out) {
  const char *p = image + sizeof(linked_magic) - 1;
  char *end = nullptr;
  size_t total = std::strtoull(p, &end, 10);
  p = end + 1;
  const char *stop = p + total;
  while (p < stop) {
    char tag = *p;
    size_t n = std::strtoull(p + 4, &end, 10);
    p = end + 1;
    auto bytes = reinterpret_cast<const unsigned char *>(p);
    load_result r = tag == 'p'   ? parse_ptx(std::string(p, n), out)
                    : tag == 'e' ? read_cubin(bytes, n, out)
                                 : read_fatbin(bytes, n, out);
    if (r.code != CUDA_SUCCESS)
      return r;
    p += n;
  }
  return {};
}

size_t elf_size(const unsigned char *d) {
  auto eh = read<Elf64_Ehdr>(d);
  size_t size = eh.e_shoff + size_t(eh.e_shnum) * eh.e_shentsize;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    auto s = read<Elf64_Shdr>(d + eh.e_shoff + i * sizeof(Elf64_Shdr));
    if (s.sh_type != SHT_NOBITS)
      size = std::max<size_t>(size, s.sh_offset + s.sh_size);
  }
  return size;
}
} // namespace

load_result read_image(const void *image, size_t size, image_info &out) {
  if (!image)
    return {CUDA_ERROR_INVALID_VALUE, ""};
  auto d = static_cast<const unsigned char *>(image);
  if (std::memcmp(d, ELFMAG, SELFMAG) == 0) {
    if (d[EI_CLASS] != ELFCLASS64)
      return bad_image("not a 64-bit cubin");
    return read_cubin(d, size ? size : elf_size(d), out);
  }
  if (read<uint32_t>(d) == fatbin_magic) {
    size_t fat = 16 + size_t(read<uint64_t>(d + 8));
    return read_fatbin(d, size ? std::min(size, fat) : fat, out);
  }
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, linked_magic, sizeof(linked_magic) - 1) == 0)
    return read_linked(text, out);
  // PTX: text whose first directive is .version (after comments and blank space).
  std::string ptx = size ? std::string(text, strnlen(text, size)) : std::string(text);
  size_t first = 0;
  while (true) {
    first = ptx.find_first_not_of(" \t\r\n", first);
    if (first == std::string::npos)
      break;
    if (ptx.compare(first, 2, "//") == 0) {
      first = ptx.find('\n', first);
    } else if (ptx.compare(first, 2, "/*") == 0) {
      first = ptx.find("*/", first);
      if (first != std::string::npos)
        first += 2;
    } else {
      break;
    }
    if (first == std::string::npos)
      break;
  }
  if (first == std::string::npos || ptx.compare(first, 8, ".version") != 0)
    return bad_image("the image is neither PTX (no .version directive), a cubin nor a fatbin");
  return parse_ptx(ptx, out);
}

} // namespace fake
