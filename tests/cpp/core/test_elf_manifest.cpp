// Tests core/src/elf_manifest.cpp: reading manifests and exports from files without loading them.
#define BOOST_TEST_MODULE elf_manifest
#include <boost/test/included/unit_test.hpp>

#include "elf_manifest.hpp"
#include "test_support.hpp"

#include <cuplug/errors.hpp>

#include <elf.h>

#include <cstring>

using namespace cuplug;
using test_support::fake_plugin;
using test_support::temp_dir;

namespace {

// The plugin_error message read_elf_manifest gives for `path`.
std::string manifest_error(const std::string &path) {
  try {
    read_elf_manifest(path);
  } catch (const plugin_error &e) {
    return e.what();
  }
  BOOST_ERROR("read_elf_manifest(" << path << ") did not throw plugin_error");
  return {};
}

// A minimal ELF header with the given identification and type, no sections.
std::string elf_header(unsigned char cls, unsigned char data, std::uint16_t type) {
  Elf64_Ehdr h{};
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = cls;
  h.e_ident[EI_DATA] = data;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = type;
  h.e_machine = EM_X86_64;
  h.e_version = EV_CURRENT;
  h.e_ehsize = sizeof(Elf64_Ehdr);
  h.e_shentsize = sizeof(Elf64_Shdr);
  return std::string(reinterpret_cast<const char *>(&h), sizeof h);
}

} // namespace

BOOST_AUTO_TEST_CASE(reads_a_good_plugins_manifest) {
  std::size_t section_bytes = 0;
  const plugin_manifest m = read_elf_manifest(fake_plugin("good_allocator"), &section_bytes);
  BOOST_TEST(std::string(m.magic) == "CUPLUGM");
  BOOST_TEST(m.struct_size == sizeof(plugin_manifest));
  BOOST_TEST(section_bytes == sizeof(plugin_manifest));
  BOOST_TEST(m.abi_major == plugin_abi_major);
  BOOST_TEST(m.kind == static_cast<std::uint32_t>(plugin_kind::allocator));
  BOOST_TEST(m.interface_version == allocator_interface_version);
  BOOST_TEST(std::string(m.abi_tag) == CUPLUG_ABI_TAG);
  BOOST_TEST(std::string(m.name) == "fake_alloc");
  BOOST_TEST(std::string(m.description) == "host memory for tests");
  BOOST_TEST(std::string(m.version) == "1.0");
}

BOOST_AUTO_TEST_CASE(reads_every_kind) {
  const std::pair<const char *, plugin_kind> cases[] = {{"good_compiler", plugin_kind::compiler},
                                                        {"good_launcher", plugin_kind::launcher},
                                                        {"good_rng", plugin_kind::rng},
                                                        {"good_interop", plugin_kind::interop}};
  for (const auto &[file, kind] : cases)
    BOOST_TEST(read_elf_manifest(fake_plugin(file)).kind == static_cast<std::uint32_t>(kind));
}

BOOST_AUTO_TEST_CASE(reports_the_real_section_size) {
  std::size_t section_bytes = 0;
  read_elf_manifest(fake_plugin("double_manifest"), &section_bytes);
  BOOST_TEST(section_bytes >= 2 * sizeof(plugin_manifest)); // plus alignment padding
}

BOOST_AUTO_TEST_CASE(rejects_a_file_that_is_not_elf) {
  const std::string msg = manifest_error(fake_plugin("not_elf"));
  CHECK_CONTAINS(msg, fake_plugin("not_elf"));
  CHECK_CONTAINS(msg, "not an ELF file");
}

BOOST_AUTO_TEST_CASE(rejects_an_empty_file) {
  temp_dir dir;
  CHECK_CONTAINS(manifest_error(dir.write("libempty.so", "").string()), "not an ELF file");
}

BOOST_AUTO_TEST_CASE(rejects_a_missing_file) {
  const std::string msg = manifest_error("/nonexistent/libnothing.so");
  CHECK_CONTAINS(msg, "/nonexistent/libnothing.so");
  CHECK_CONTAINS(msg, "cannot open");
}

BOOST_AUTO_TEST_CASE(rejects_a_library_without_the_section) {
  const std::string msg = manifest_error(fake_plugin("no_manifest"));
  CHECK_CONTAINS(msg, "no 'cuplug_manifest' section");
  CHECK_CONTAINS(msg, "CUPLUG_PLUGIN");
}

BOOST_AUTO_TEST_CASE(rejects_32_bit_and_big_endian_files) {
  temp_dir dir;
  CHECK_CONTAINS(
      manifest_error(dir.write("lib32.so", elf_header(ELFCLASS32, ELFDATA2LSB, ET_DYN)).string()),
      "32-bit");
  CHECK_CONTAINS(
      manifest_error(dir.write("libbe.so", elf_header(ELFCLASS64, ELFDATA2MSB, ET_DYN)).string()),
      "big-endian");
}

BOOST_AUTO_TEST_CASE(rejects_elf_files_that_are_not_shared_libraries) {
  temp_dir dir;
  CHECK_CONTAINS(
      manifest_error(dir.write("librel.so", elf_header(ELFCLASS64, ELFDATA2LSB, ET_REL)).string()),
      "not a shared library");
}

BOOST_AUTO_TEST_CASE(rejects_a_header_cut_short) {
  temp_dir dir;
  const std::string header = elf_header(ELFCLASS64, ELFDATA2LSB, ET_DYN);
  CHECK_CONTAINS(manifest_error(dir.write("libshort.so", header.substr(0, 40)).string()),
                 "truncated");
}

BOOST_AUTO_TEST_CASE(rejects_section_tables_outside_the_file) {
  temp_dir dir;
  std::string bytes = elf_header(ELFCLASS64, ELFDATA2LSB, ET_DYN);
  Elf64_Ehdr h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.e_shoff = 1 << 20;
  h.e_shnum = 3;
  std::memcpy(bytes.data(), &h, sizeof h);
  CHECK_CONTAINS(manifest_error(dir.write("libfar.so", bytes).string()), "truncated");
  h.e_shoff = sizeof h;
  h.e_shnum = 1;
  h.e_shstrndx = 7; // no such section
  std::memcpy(bytes.data(), &h, sizeof h);
  bytes += std::string(sizeof(Elf64_Shdr), '\0');
  CHECK_CONTAINS(manifest_error(dir.write("libidx.so", bytes).string()), "out of range");
}

BOOST_AUTO_TEST_CASE(rejects_a_truncated_plugin_at_every_cut) {
  // Any prefix of a real plugin must give an error, never a crash or a bogus manifest.
  temp_dir dir;
  const std::string whole = test_support::read_file(fake_plugin("good_allocator"));
  BOOST_REQUIRE_GT(whole.size(), 4096u);
  for (std::size_t cut : {std::size_t(0), std::size_t(3), std::size_t(63), std::size_t(64),
                          std::size_t(1000), whole.size() / 2, whole.size() - 1}) {
    const auto path = dir.write("libcut.so", whole.substr(0, cut));
    try {
      read_elf_manifest(path.string());
      BOOST_ERROR("a copy cut at " << cut << " bytes was accepted");
    } catch (const plugin_error &e) {
      BOOST_TEST_MESSAGE("cut at " << cut << ": " << e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(finds_the_create_destroy_exports) {
  BOOST_TEST(
      missing_elf_exports(fake_plugin("good_allocator"), {create_alias, destroy_alias}).empty());
  const auto missing =
      missing_elf_exports(fake_plugin("missing_create"), {create_alias, destroy_alias});
  BOOST_TEST(missing == std::vector<std::string>{create_alias});
  // Hidden and undefined symbols do not count.
  BOOST_TEST(missing_elf_exports(fake_plugin("good_allocator"), {"fake_plugins_hidden", "malloc"})
                 .size() == 2u);
}

BOOST_AUTO_TEST_CASE(exports_survive_strip) {
  // Installed plugins are often stripped (wheels are): the check must read .dynsym, not .symtab.
  temp_dir dir;
  const auto copy = dir.copy_in(fake_plugin("good_allocator"), "libstripped.so");
  const std::string cmd = "strip --strip-all '" + copy.string() + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    BOOST_TEST_MESSAGE("strip is not installed; skipping the stripped-plugin check");
    return;
  }
  BOOST_TEST(missing_elf_exports(copy.string(), {create_alias, destroy_alias}).empty());
  BOOST_TEST(std::string(read_elf_manifest(copy.string()).name) == "fake_alloc");
}
