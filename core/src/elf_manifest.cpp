// Bounds-checked ELF64 reading of a plugin's manifest section and dynamic exports, no dlopen.
#include "elf_manifest.hpp"

#include <cuplug/errors.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>

namespace cuplug {
namespace {

// The structs from <elf.h> are filled by memcpy from the file, which is only right when the
// host has the file's byte order; plugins are ELF64 little-endian and so are our hosts.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the ELF reader assumes a little-endian host");

[[noreturn]] void fail(const std::string &path, const std::string &why) {
  throw plugin_error(path + ": " + why);
}

// Sections and tables larger than these are refused rather than read: real plugins are far
// below them, and a hostile (say, sparse) file must not make the reader allocate gigabytes.
constexpr std::uint64_t max_section_bytes = std::uint64_t{256} << 20;
constexpr std::uint64_t max_sections = std::uint64_t{1} << 20;

// A descriptor of ours, closed on scope exit (the path overloads open one).
struct owned_fd {
  int fd = -1;
  ~owned_fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

// Opens `path` for reading without blocking, refusing anything but a regular file before it is
// opened (a FIFO would block and a device may act on open), and checks the open file again.
int open_regular(const std::string &path, owned_fd &holder) {
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0)
    fail(path, std::string("cannot open it: ") + std::strerror(errno));
  if (!S_ISREG(before.st_mode))
    fail(path, "not a regular file; plugins are shared library files");
  holder.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat after {};
  if (holder.fd < 0 || ::fstat(holder.fd, &after) != 0)
    fail(path, std::string("cannot open it: ") + std::strerror(errno));
  if (!S_ISREG(after.st_mode) || after.st_dev != before.st_dev || after.st_ino != before.st_ino)
    fail(path, "it changed while it was being opened; try again");
  return holder.fd;
}

// One ELF64 LE file open for reading; every offset read from it is checked against its size
// first, so a truncated or hostile file gives an error instead of a wild read.
class elf_file {
public:
  elf_file(int fd, const std::string &path) : path_(path), fd_(fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0)
      fail(path, std::string("cannot inspect it: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      fail(path, "not a regular file; plugins are shared library files");
    size_ = static_cast<std::uint64_t>(st.st_size);
    read_header();
    read_section_table();
  }

  // The section called `name`, or nullptr.
  const Elf64_Shdr *section(const char *name) const {
    for (std::size_t i = 0; i < sections_.size(); ++i) {
      const Elf64_Shdr &s = sections_[i];
      // The whole name and its NUL must lie inside the table: a table cut short must not
      // make "cuplug_man" match.
      const std::size_t wanted = std::strlen(name) + 1;
      if (s.sh_name < names_.size() && names_.size() - s.sh_name >= wanted &&
          std::memcmp(names_.data() + s.sh_name, name, wanted) == 0)
        return &s;
    }
    return nullptr;
  }
  const Elf64_Shdr *section_of_type(std::uint32_t type) const {
    for (const Elf64_Shdr &s : sections_)
      if (s.sh_type == type)
        return &s;
    return nullptr;
  }
  const Elf64_Shdr *section_at(std::size_t index) const {
    return index < sections_.size() ? &sections_[index] : nullptr;
  }

  // The bytes of a section's contents (up to `limit` of them), checked against the file size.
  std::vector<char> contents(const Elf64_Shdr &s, const char *what,
                             std::uint64_t limit = UINT64_MAX) const {
    if (s.sh_type == SHT_NOBITS)
      fail(path_, std::string("its ") + what + " section has no contents in the file (SHT_NOBITS)");
    check_range(s.sh_offset, s.sh_size, what);
    const std::uint64_t wanted = std::min(s.sh_size, limit);
    if (wanted > max_section_bytes)
      fail(path_, "its " + std::string(what) + " claims " + std::to_string(s.sh_size) +
                      " bytes, more than cuplug reads from a plugin (" +
                      std::to_string(max_section_bytes) + "): the file is corrupt");
    std::vector<char> bytes(static_cast<std::size_t>(wanted));
    read_at(s.sh_offset, bytes.data(), bytes.size());
    return bytes;
  }

  const std::string &path() const { return path_; }

private:
  void check_range(std::uint64_t offset, std::uint64_t bytes, const char *what) const {
    if (offset > size_ || bytes > size_ - offset)
      fail(path_, "the file is truncated or corrupt: its " + std::string(what) + " (" +
                      std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                      ") lies beyond its end (" + std::to_string(size_) + " bytes)");
  }

  // pread: the descriptor's offset is left alone, and nothing here depends on it.
  void read_at(std::uint64_t offset, void *out, std::size_t bytes) const {
    std::size_t got = 0;
    while (got < bytes) {
      const ssize_t n = ::pread(fd_, static_cast<char *>(out) + got, bytes - got,
                                static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        fail(path_,
             "read error at offset " + std::to_string(offset + got) + ": " + std::strerror(errno));
      if (n == 0)
        fail(path_, "the file is truncated: it ended at offset " + std::to_string(offset + got) +
                        " while " + std::to_string(bytes) + " bytes were read from offset " +
                        std::to_string(offset) + " (it shrank while read?)");
      got += static_cast<std::size_t>(n);
    }
  }

  void read_header() {
    unsigned char ident[EI_NIDENT] = {};
    const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(size_, EI_NIDENT));
    read_at(0, ident, have);
    if (size_ == 0)
      fail(path_, "the file is empty; plugins are shared libraries built with cuplug_add_plugin()");
    // A prefix of the magic is a cut-off ELF file, not some other kind of file.
    if (std::memcmp(ident, ELFMAG, std::min<std::size_t>(have, SELFMAG)) != 0)
      fail(path_, "not an ELF file (it does not start with the ELF magic bytes); plugins are "
                  "shared libraries built with cuplug_add_plugin()");
    if (have == EI_NIDENT && ident[EI_CLASS] == ELFCLASS32)
      fail(path_, "a 32-bit ELF file; cuplug plugins are 64-bit shared libraries");
    if (have == EI_NIDENT && ident[EI_CLASS] != ELFCLASS64)
      fail(path_, "corrupt ELF header: unknown class " + std::to_string(ident[EI_CLASS]) +
                      " (neither 32- nor 64-bit)");
    if (have == EI_NIDENT && ident[EI_DATA] == ELFDATA2MSB)
      fail(path_, "a big-endian ELF file; cuplug plugins are little-endian");
    if (have == EI_NIDENT && ident[EI_DATA] != ELFDATA2LSB)
      fail(path_, "corrupt ELF header: unknown byte order " + std::to_string(ident[EI_DATA]));
    if (size_ < sizeof(Elf64_Ehdr))
      fail(path_, "the file is truncated: it starts like an ELF file but holds only " +
                      std::to_string(size_) + " bytes, fewer than an ELF header (" +
                      std::to_string(sizeof(Elf64_Ehdr)) + ")");
    check_range(0, sizeof(Elf64_Ehdr), "ELF header");
    read_at(0, &header_, sizeof header_);
    if (header_.e_type != ET_DYN)
      fail(path_, "an ELF file but not a shared library (e_type " + std::to_string(header_.e_type) +
                      "); plugins are MODULE libraries");
  }

  void read_section_table() {
    if (header_.e_shoff == 0)
      fail(path_, "the file has no section table, so it has no cuplug_manifest section");
    if (header_.e_shentsize != sizeof(Elf64_Shdr))
      fail(path_, "corrupt ELF header: section header size " + std::to_string(header_.e_shentsize) +
                      ", expected " + std::to_string(sizeof(Elf64_Shdr)));
    // Extended numbering: with 0xff00 or more sections the counts live in section 0.
    std::uint64_t count = header_.e_shnum;
    std::uint64_t names_index = header_.e_shstrndx;
    if (count == 0 || names_index == SHN_XINDEX) {
      Elf64_Shdr first{};
      check_range(header_.e_shoff, sizeof first, "section header table");
      read_at(header_.e_shoff, &first, sizeof first);
      if (count == 0)
        count = first.sh_size;
      if (names_index == SHN_XINDEX)
        names_index = first.sh_link;
    }
    if (count > size_ / sizeof(Elf64_Shdr) || count > max_sections)
      fail(path_, "the file is truncated or corrupt: it claims " + std::to_string(count) +
                      " sections in " + std::to_string(size_) + " bytes");
    check_range(header_.e_shoff, count * sizeof(Elf64_Shdr), "section header table");
    sections_.resize(static_cast<std::size_t>(count));
    read_at(header_.e_shoff, sections_.data(), sections_.size() * sizeof(Elf64_Shdr));
    if (names_index >= count)
      fail(path_, "corrupt ELF header: section name table index " + std::to_string(names_index) +
                      " is out of range (" + std::to_string(count) + " sections)");
    names_ = contents(sections_[static_cast<std::size_t>(names_index)], "section name table");
  }

  std::string path_;
  int fd_;
  std::uint64_t size_ = 0;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
  std::vector<char> names_;
};

// The fields every manifest version has: magic, struct_size, abi_major. Anything shorter cannot
// even say which ABI it was built for.
constexpr std::size_t manifest_prefix_bytes = offsetof(plugin_manifest, kind);

} // namespace

plugin_manifest read_elf_manifest(const std::string &path, std::size_t *section_bytes) {
  owned_fd holder;
  return read_elf_manifest(open_regular(path, holder), path, section_bytes);
}

plugin_manifest read_elf_manifest(int fd, const std::string &path, std::size_t *section_bytes) {
  elf_file file(fd, path);
  const Elf64_Shdr *s = file.section(manifest_section);
  if (s == nullptr)
    fail(path,
         std::string("no '") + manifest_section +
             "' section: not a cuplug plugin (a plugin declares itself with CUPLUG_PLUGIN(...) "
             "in one of its source files)");
  if (s->sh_size < manifest_prefix_bytes)
    fail(path, std::string("its '") + manifest_section + "' section holds " +
                   std::to_string(s->sh_size) + " bytes, too few for a manifest (at least " +
                   std::to_string(manifest_prefix_bytes) + ")");
  std::vector<char> bytes = file.contents(*s, manifest_section, sizeof(plugin_manifest));
  plugin_manifest m{};
  std::memcpy(&m, bytes.data(), bytes.size());
  if (section_bytes != nullptr)
    *section_bytes = static_cast<std::size_t>(s->sh_size);
  return m;
}

std::vector<std::string> missing_elf_exports(const std::string &path,
                                             const std::vector<std::string> &names) {
  owned_fd holder;
  return missing_elf_exports(open_regular(path, holder), path, names);
}

std::vector<std::string> missing_elf_exports(int fd, const std::string &path,
                                             const std::vector<std::string> &names) {
  elf_file file(fd, path);
  std::set<std::string> wanted(names.begin(), names.end());
  const Elf64_Shdr *symtab = file.section_of_type(SHT_DYNSYM);
  if (symtab != nullptr) {
    if (symtab->sh_entsize != sizeof(Elf64_Sym))
      fail(path, "corrupt .dynsym: entry size " + std::to_string(symtab->sh_entsize));
    const Elf64_Shdr *strtab = file.section_at(symtab->sh_link);
    if (strtab == nullptr)
      fail(path, "corrupt .dynsym: its string table index is out of range");
    std::vector<char> syms = file.contents(*symtab, "dynamic symbol table");
    std::vector<char> strs = file.contents(*strtab, "dynamic string table");
    for (std::size_t off = 0; off + sizeof(Elf64_Sym) <= syms.size(); off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, syms.data() + off, sizeof sym);
      const unsigned bind = ELF64_ST_BIND(sym.st_info);
      const bool exported = sym.st_shndx != SHN_UNDEF &&
                            ELF64_ST_VISIBILITY(sym.st_other) == STV_DEFAULT &&
                            (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE);
      if (!exported || sym.st_name >= strs.size())
        continue;
      const char *name = strs.data() + sym.st_name;
      const std::size_t room = strs.size() - sym.st_name;
      if (std::memchr(name, '\0', room) == nullptr)
        continue;
      wanted.erase(name);
    }
  }
  std::vector<std::string> missing;
  for (const std::string &n : names)
    if (wanted.count(n) != 0)
      missing.push_back(n);
  return missing;
}

} // namespace cuplug
