// Reads a plugin's manifest and export table straight from its ELF file, before any of it runs.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace cuplug {

// The `cuplug_manifest` section of an ELF64 little-endian shared library, read without loading
// it. `section_bytes` receives the section's size (a manifest from another ABI may be longer or
// shorter; the copy is cut or zero-filled to sizeof(plugin_manifest), and the caller decides).
// Throws plugin_error naming the file for anything that is not a readable ELF64 LE shared
// library with that section: not a regular file, not ELF, 32-bit, big-endian, truncated, no
// section, section too small to hold even the ABI fields. Never blocks on a FIFO or device: the
// file type is checked before anything is read.
plugin_manifest read_elf_manifest(const std::string &path, std::size_t *section_bytes = nullptr);
// The same from a file already open (the loader's checked descriptor; read with pread, so its
// offset is left alone); `path` names it in messages.
plugin_manifest read_elf_manifest(int fd, const std::string &path,
                                  std::size_t *section_bytes = nullptr);

// Which of `names` the file does NOT export as defined, global, default-visibility dynamic
// symbols (.dynsym, which is what dlsym sees and what survives `strip`). Throws plugin_error
// like read_elf_manifest.
std::vector<std::string> missing_elf_exports(const std::string &path,
                                             const std::vector<std::string> &names);
std::vector<std::string> missing_elf_exports(int fd, const std::string &path,
                                             const std::vector<std::string> &names);

} // namespace cuplug
