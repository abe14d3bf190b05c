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
// library with that section: not ELF, 32-bit, big-endian, truncated, no section, section too
// small to hold even the ABI fields.
plugin_manifest read_elf_manifest(const std::string &path, std::size_t *section_bytes = nullptr);

// Which of `names` the file does NOT export as defined, global, default-visibility dynamic
// symbols (.dynsym, which is what dlsym sees and what survives `strip`). Throws plugin_error
// like read_elf_manifest.
std::vector<std::string> missing_elf_exports(const std::string &path,
                                             const std::vector<std::string> &names);

} // namespace cuplug
