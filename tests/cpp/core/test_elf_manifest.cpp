// Tests core/src/elf_manifest.cpp: reading manifests and exports from files without loading them.
#define BOOST_TEST_MODULE elf_manifest
#include <boost/test/included/unit_test.hpp>

#include "elf_manifest.hpp"
#include "plugin_loader.hpp"
#include "test_support.hpp"

#include <cuplug/errors.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <random>
#include <typeinfo>

using namespace cuplug;
using test_support::fake_plugin;
using test_support::temp_dir;
namespace fs = std::filesystem;

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
  CHECK_CONTAINS(manifest_error(dir.write("libempty.so", "").string()), "the file is empty");
}

// Issue 13 item 16: it said "it does not start with the ELF magic bytes" of a file that does.
BOOST_AUTO_TEST_CASE(calls_a_short_file_with_the_magic_truncated) {
  temp_dir dir;
  const std::string magic7("\x7f"
                           "ELF\x02\x01\x01",
                           7);
  const std::string msg = manifest_error(dir.write("lib7.so", magic7).string());
  CHECK_CONTAINS(msg, "the file is truncated: it starts like an ELF file but holds only 7 bytes");
  BOOST_TEST(!test_support::contains(msg, "does not start with"), msg);
  CHECK_CONTAINS(manifest_error(dir.write("lib2.so", magic7.substr(0, 2)).string()), "truncated");
  CHECK_CONTAINS(manifest_error(dir.write("libx.so", "\x7f"
                                                     "ELX")
                                    .string()),
                 "not an ELF file");
}

// Issue 13 item 8: the reader checks the type before opening, so a FIFO cannot block it.
BOOST_AUTO_TEST_CASE(refuses_a_fifo_without_blocking) {
  temp_dir dir;
  const fs::path fifo = dir.path() / "libfifo.so";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto read = std::async(std::launch::async, [&] { return manifest_error(fifo.string()); });
  if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int unblock = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK); // releases a blocked reader
    read.wait();
    if (unblock >= 0)
      ::close(unblock);
    BOOST_ERROR("read_elf_manifest blocked on a FIFO");
  }
  const std::string refused = read.get();
  CHECK_CONTAINS(refused, "not a regular file");
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

// --- randomized inputs: the reader and the loader's checks must refuse any byte string with
// plugin_error (or accept it), never crash, hang or throw anything else -----------------------

namespace {

// An in-memory file (memfd) refilled for each input: thousands of inputs without disk writes.
class memory_file {
public:
  memory_file() : fd_(::memfd_create("cuplug-elf-fuzz", MFD_CLOEXEC)) { BOOST_REQUIRE(fd_ >= 0); }
  ~memory_file() { ::close(fd_); }
  int fill(const std::string &bytes) {
    BOOST_REQUIRE(::ftruncate(fd_, 0) == 0);
    BOOST_REQUIRE(::pwrite(fd_, bytes.data(), bytes.size(), 0) ==
                  static_cast<ssize_t>(bytes.size()));
    return fd_;
  }

private:
  int fd_;
};

// Feeds `bytes` to both readers; anything escaping but plugin_error fails the test.
void read_any(memory_file &file, const std::string &bytes, const std::string &what) {
  const int fd = file.fill(bytes);
  try {
    read_elf_manifest(fd, what);
  } catch (const plugin_error &) {
  } catch (const std::exception &e) {
    BOOST_ERROR(what << ": read_elf_manifest threw " << typeid(e).name() << ": " << e.what());
  }
  try {
    missing_elf_exports(fd, what, {create_alias, destroy_alias});
  } catch (const plugin_error &) {
  } catch (const std::exception &e) {
    BOOST_ERROR(what << ": missing_elf_exports threw " << typeid(e).name() << ": " << e.what());
  }
}

// The fixed seed makes a failure reproducible; CUPLUG_FUZZ_SEED explores others.
unsigned fuzz_seed() {
  const char *env = std::getenv("CUPLUG_FUZZ_SEED");
  const unsigned seed = env != nullptr ? static_cast<unsigned>(std::strtoul(env, nullptr, 0)) : 13u;
  BOOST_TEST_MESSAGE("fuzz seed " << seed << " (set CUPLUG_FUZZ_SEED to change it)");
  return seed;
}

} // namespace

BOOST_AUTO_TEST_CASE(survives_every_truncation_of_a_plugin) {
  memory_file file;
  for (const char *name : {"good_allocator", "double_manifest"}) {
    const std::string whole = test_support::read_file(fake_plugin(name));
    BOOST_REQUIRE_GT(whole.size(), 4096u);
    for (std::size_t cut = 0; cut < whole.size(); ++cut)
      read_any(file, whole.substr(0, cut), std::string(name) + " cut at " + std::to_string(cut));
  }
}

BOOST_AUTO_TEST_CASE(survives_random_mutations_of_a_plugin) {
  const std::string whole = test_support::read_file(fake_plugin("good_allocator"));
  Elf64_Ehdr h;
  std::memcpy(&h, whole.data(), sizeof h);
  const std::size_t table = static_cast<std::size_t>(h.e_shoff);
  const std::size_t table_end = std::min(whole.size(), table + h.e_shnum * sizeof(Elf64_Shdr));
  const std::size_t manifest = whole.find(std::string("CUPLUGM\0", 8));
  BOOST_REQUIRE(manifest != std::string::npos);
  // Values that tend to break size arithmetic.
  const std::uint64_t edges[] = {0,
                                 1,
                                 7,
                                 0x7fffffff,
                                 0xffffffff,
                                 whole.size(),
                                 whole.size() - 1,
                                 std::uint64_t{1} << 40,
                                 ~std::uint64_t{0},
                                 ~std::uint64_t{0} - 63};
  std::mt19937_64 rng(fuzz_seed());
  auto pick = [&](std::size_t from, std::size_t to) {
    return from + static_cast<std::size_t>(rng() % std::max<std::size_t>(1, to - from));
  };
  memory_file file;
  temp_dir dir;
  std::size_t accepted = 0;
  for (int round = 0; round < 10000; ++round) {
    std::string bytes = whole;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      std::size_t at = 0;
      switch (rng() % 4) {
      case 0:
        at = pick(0, sizeof(Elf64_Ehdr));
        break; // the header
      case 1:
        at = pick(table, table_end);
        break; // the section table
      case 2:
        at = pick(manifest, manifest + sizeof(plugin_manifest));
        break;
      default:
        at = pick(0, bytes.size());
        break;
      }
      if (rng() % 2 == 0 && at + 8 <= bytes.size()) {
        const std::uint64_t v = edges[rng() % (sizeof edges / sizeof edges[0])];
        std::memcpy(&bytes[at], &v, rng() % 2 == 0 ? 8 : 4);
      } else if (at < bytes.size()) {
        bytes[at] = static_cast<char>(rng());
      }
    }
    const std::string what = "mutation round " + std::to_string(round);
    read_any(file, bytes, what);
    // The loader's own checks (manifest fields, names, kinds) on a file path, without ever
    // loading: check_candidate reads, it does not dlopen.
    if (round % 5 == 0) {
      const fs::path path = dir.write("libfuzz.so", bytes);
      ::chmod(path.c_str(), 0755);
      plugin_candidate c;
      c.path = path.string();
      detail::checked_file opened;
      try {
        accepted += detail::check_candidate(path, c, opened).empty();
      } catch (const std::exception &e) {
        BOOST_ERROR(what << ": check_candidate threw " << typeid(e).name() << ": " << e.what());
      }
    }
  }
  BOOST_TEST_MESSAGE(accepted << " mutated files passed the loader's checks (harmless edits)");
}

BOOST_AUTO_TEST_CASE(survives_random_bytes) {
  std::mt19937_64 rng(fuzz_seed() + 1);
  memory_file file;
  for (int round = 0; round < 5000; ++round) {
    std::string bytes(static_cast<std::size_t>(rng() % 4096), '\0');
    for (char &b : bytes)
      b = static_cast<char>(rng());
    // Mostly with a valid identification, so the header and tables get read.
    if (round % 4 != 0 && bytes.size() >= EI_NIDENT) {
      std::memcpy(&bytes[0], ELFMAG, SELFMAG);
      bytes[EI_CLASS] = ELFCLASS64;
      bytes[EI_DATA] = ELFDATA2LSB;
      if (bytes.size() >= sizeof(Elf64_Ehdr) && round % 2 == 0) {
        Elf64_Ehdr h;
        std::memcpy(&h, bytes.data(), sizeof h);
        h.e_type = ET_DYN;
        h.e_shentsize = sizeof(Elf64_Shdr);
        h.e_shoff = rng() % bytes.size();
        h.e_shnum = static_cast<Elf64_Half>(rng() % 64);
        std::memcpy(&bytes[0], &h, sizeof h);
      }
    }
    read_any(file, bytes, "random round " + std::to_string(round));
  }
}
