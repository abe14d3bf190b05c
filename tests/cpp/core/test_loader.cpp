// Tests the handshake in core/src/plugin_loader.cpp: what is refused before loading, and why.
#define BOOST_TEST_MODULE loader
#include <boost/test/included/unit_test.hpp>

#include "plugin_loader.hpp"
#include "test_support.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>

using namespace cuplug;
using test_support::fake_plugin;
using test_support::only;
using test_support::temp_dir;
using state = plugin_candidate::state;
namespace fs = std::filesystem;

namespace {

registry &reg() { return registry::instance(); }

plugin_candidate load_one(const std::string &path, const std::string &source = "explicit") {
  return only(reg().load(path, source));
}

// Loads a fake plugin that must be refused and returns the reason.
std::string refusal(const std::string &name) {
  const plugin_candidate c = load_one(fake_plugin(name));
  BOOST_TEST(c.outcome == state::rejected);
  BOOST_TEST_MESSAGE(name << ": " << c.reason);
  return c.reason;
}

} // namespace

BOOST_AUTO_TEST_CASE(loads_a_good_plugin_of_every_kind) {
  const std::tuple<const char *, plugin_kind, const char *> cases[] = {
      {"good_allocator", plugin_kind::allocator, "fake_alloc"},
      {"good_compiler", plugin_kind::compiler, "fake_compiler"},
      {"good_launcher", plugin_kind::launcher, "fake_launcher"},
      {"good_rng", plugin_kind::rng, "fake_rng"},
      {"good_interop", plugin_kind::interop, "fake_interop"}};
  for (const auto &[file, kind, name] : cases) {
    const plugin_candidate c = load_one(fake_plugin(file));
    BOOST_TEST(c.outcome == state::loaded, file << ": " << c.reason);
    BOOST_TEST(c.reason.empty());
    BOOST_TEST(c.has_manifest);
    BOOST_TEST(c.path == fake_plugin(file));
    BOOST_REQUIRE(reg().has(kind, name));
    const plugin_info info = reg().info(kind, name);
    BOOST_TEST(info.kind == kind);
    BOOST_TEST(info.path == fake_plugin(file));
    BOOST_TEST(info.source == "explicit");
    BOOST_TEST(info.version == "1.0");
    BOOST_TEST(info.abi_tag == CUPLUG_ABI_TAG);
    BOOST_TEST(!info.description.empty());
  }
}

BOOST_AUTO_TEST_CASE(loading_the_same_file_again_changes_nothing) {
  const auto before = reg().diagnostics().size();
  BOOST_TEST(load_one(fake_plugin("good_allocator")).outcome == state::loaded);
  BOOST_TEST(load_one(fake_plugin("good_allocator")).outcome == state::loaded);
  BOOST_TEST(reg().diagnostics().size() >= before);
  int entries = 0;
  for (const auto &c : reg().diagnostics())
    entries += c.path == fake_plugin("good_allocator");
  BOOST_TEST(entries == 1);
}

BOOST_AUTO_TEST_CASE(refuses_another_plugin_abi) {
  const std::string reason = refusal("bad_abi_major");
  BOOST_TEST(reason == "plugin 'fake_abi2' (" + fake_plugin("bad_abi_major") +
                           ") was built for plugin ABI " + std::to_string(plugin_abi_major + 1) +
                           ", this cuplug provides " + std::to_string(plugin_abi_major) +
                           ": rebuild it against cuplug 0.1");
  BOOST_TEST(!reg().has(plugin_kind::allocator, "fake_abi2"));
}

BOOST_AUTO_TEST_CASE(refuses_another_standard_library_saying_which_to_use) {
  const std::string reason = refusal("bad_abi_tag");
  CHECK_CONTAINS(reason, "plugin 'fake_tag'");
  CHECK_CONTAINS(reason, "ABI tag 'itanium/libc++-abi1/x86_64-lp64'");
  CHECK_CONTAINS(reason, std::string("this cuplug has '") + CUPLUG_ABI_TAG + "'");
  CHECK_CONTAINS(reason, "its standard library is LLVM libc++");
  CHECK_CONTAINS(reason, "build it with g++ (any version from 5 on) or clang++ against libstdc++");
}

BOOST_AUTO_TEST_CASE(loads_a_plugin_whose_first_format_tag_names_another_compiler) {
  const plugin_candidate c = load_one(fake_plugin("legacy_abi_tag"));
  BOOST_TEST(c.outcome == state::loaded, c.reason);
  BOOST_TEST(reg().has(plugin_kind::allocator, "fake_legacy_tag"));
}

BOOST_AUTO_TEST_CASE(refuses_an_unidentified_abi_tag) {
  const std::string reason = refusal("unknown_abi_tag");
  CHECK_CONTAINS(reason, "plugin 'fake_unknown_tag'");
  CHECK_CONTAINS(reason, "ABI tag 'cxxabi-unknown/stdlib-unknown/x86_64-lp64'");
  CHECK_CONTAINS(reason, "could not be identified");
  CHECK_CONTAINS(reason, std::string("(ABI tag '") + CUPLUG_ABI_TAG + "')");
  BOOST_TEST(!reg().has(plugin_kind::allocator, "fake_unknown_tag"));
}

BOOST_AUTO_TEST_CASE(refuses_a_plugin_built_against_a_longer_driver_table) {
  const std::string reason = refusal("newer_driver_table");
  BOOST_TEST(reason == "plugin 'fake_newer_driver' (" + fake_plugin("newer_driver_table") +
                           ") was built against cuplug 99.0.0, whose CUDA driver table has " +
                           std::to_string(driver_api_entries + 1) +
                           " entry points; this cuplug (" CUPLUG_VERSION_STRING ") has " +
                           std::to_string(driver_api_entries) +
                           ", so the plugin could call entry points that are not there: rebuild "
                           "it against cuplug " CUPLUG_VERSION_STRING ", or upgrade cuplug");
  BOOST_TEST(!reg().has(plugin_kind::allocator, "fake_newer_driver"));
}

BOOST_AUTO_TEST_CASE(refuses_another_interface_version) {
  const std::string reason = refusal("bad_interface_version");
  CHECK_CONTAINS(reason, "plugin 'fake_iface'");
  CHECK_CONTAINS(reason, "implements allocator interface version 99, this cuplug provides " +
                             std::to_string(allocator_interface_version));
  CHECK_CONTAINS(reason, "rebuild it against cuplug");
}

BOOST_AUTO_TEST_CASE(refuses_a_plugin_without_its_create_function) {
  const std::string reason = refusal("missing_create");
  CHECK_CONTAINS(reason, "plugin 'fake_no_create'");
  CHECK_CONTAINS(reason, "does not export 'cuplug_create'");
  BOOST_TEST(!test_support::contains(reason, "cuplug_destroy"));
}

BOOST_AUTO_TEST_CASE(refuses_unknown_kinds_names_magic_and_sizes) {
  CHECK_CONTAINS(refusal("unknown_kind"),
                 "declares plugin kind 42, which this cuplug does not know");
  const std::string name = refusal("bad_name");
  CHECK_CONTAINS(name, "'Fake-Name'");
  CHECK_CONTAINS(name, "lowercase letters, digits and '_'");
  CHECK_CONTAINS(refusal("bad_magic"), "bad magic bytes");
  CHECK_CONTAINS(refusal("bad_struct_size"),
                 "has a manifest of " + std::to_string(sizeof(plugin_manifest) + 8) + " bytes");
  CHECK_CONTAINS(refusal("double_manifest"), "is CUPLUG_PLUGIN used more than once");
}

BOOST_AUTO_TEST_CASE(refuses_files_that_are_not_plugins) {
  const plugin_candidate not_elf = load_one(fake_plugin("not_elf"));
  BOOST_TEST(not_elf.outcome == state::rejected);
  BOOST_TEST(!not_elf.has_manifest);
  CHECK_CONTAINS(not_elf.reason, "not an ELF file");
  const plugin_candidate no_manifest = load_one(fake_plugin("no_manifest"));
  BOOST_TEST(no_manifest.outcome == state::rejected);
  BOOST_TEST(!no_manifest.has_manifest);
  CHECK_CONTAINS(no_manifest.reason, "no 'cuplug_manifest' section");
}

BOOST_AUTO_TEST_CASE(reports_a_plugin_that_cannot_be_loaded) {
  const std::string reason = refusal("unresolved_symbol");
  CHECK_CONTAINS(reason, "plugin 'fake_unresolved'");
  CHECK_CONTAINS(reason, "could not be loaded");
  CHECK_CONTAINS(reason, "fake_symbol_that_nothing_defines");
  BOOST_TEST(!reg().has(plugin_kind::allocator, "fake_unresolved"));
}

BOOST_AUTO_TEST_CASE(refuses_missing_and_empty_paths) {
  const plugin_candidate missing = load_one("/nonexistent/libnothing.so");
  BOOST_TEST(missing.outcome == state::rejected);
  CHECK_CONTAINS(missing.reason, "'/nonexistent/libnothing.so' does not exist");
  BOOST_TEST(load_one("").outcome == state::rejected);
}

BOOST_AUTO_TEST_CASE(keeps_the_first_of_two_same_named_plugins) {
  BOOST_TEST(load_one(fake_plugin("good_allocator")).outcome == state::loaded);
  const plugin_candidate dup = load_one(fake_plugin("duplicate_allocator"));
  BOOST_TEST(dup.outcome == state::duplicate);
  BOOST_TEST(dup.has_manifest);
  CHECK_CONTAINS(dup.reason,
                 "allocator 'fake_alloc' is already provided by " + fake_plugin("good_allocator"));
  BOOST_TEST(reg().info(plugin_kind::allocator, "fake_alloc").path ==
             fake_plugin("good_allocator"));
}

BOOST_AUTO_TEST_CASE(loads_every_plugin_file_of_a_folder_and_only_those) {
  const auto results = reg().load(CUPLUG_FAKE_PLUGIN_DIR);
  std::size_t plugin_files = 0;
  for (const auto &e : fs::directory_iterator(CUPLUG_FAKE_PLUGIN_DIR))
    plugin_files += e.is_regular_file() && e.path().extension() == ".so";
  BOOST_TEST(results.size() == plugin_files);
  BOOST_TEST(std::is_sorted(results.begin(), results.end(),
                            [](const auto &a, const auto &b) { return a.path < b.path; }));
  for (const auto &c : results) {
    BOOST_TEST(!test_support::contains(c.path, "/env/")); // no recursion into subfolders
    // Good plugins (one with a first-format ABI tag), and the two whose faults show only when an
    // object is created.
    const bool good = test_support::contains(c.path, "libfake_good_") ||
                      test_support::contains(c.path, "libfake_legacy_abi_tag") ||
                      test_support::contains(c.path, "libfake_throwing_factory") ||
                      test_support::contains(c.path, "libfake_wrong_kind");
    BOOST_TEST((c.outcome == state::loaded) == good, c.path << ": " << to_string(c.outcome));
  }
}

BOOST_AUTO_TEST_CASE(explicit_paths_win_over_the_plugin_path_and_the_package) {
  temp_dir dir;
  const std::string original = std::string(CUPLUG_FAKE_PLUGIN_DIR) + "/env/libfake_env_alloc.so";
  const std::string as_package = dir.copy_in(original, "libpackage_copy.so").string();
  const std::string as_explicit = dir.copy_in(original, "libexplicit_copy.so").string();
  const std::string as_env = dir.copy_in(original, "libenv_copy.so").string();

  BOOST_TEST(load_one(as_package, "package").outcome == state::loaded);
  BOOST_TEST(reg().info(plugin_kind::allocator, "fake_env_alloc").source == "package");
  BOOST_TEST(load_one(as_explicit, "explicit").outcome == state::loaded);
  const plugin_info winner = reg().info(plugin_kind::allocator, "fake_env_alloc");
  BOOST_TEST(winner.path == as_explicit);
  BOOST_TEST(winner.source == "explicit");
  const plugin_candidate superseded = test_support::diagnostic_for(as_package);
  BOOST_TEST(superseded.outcome == state::duplicate);
  CHECK_CONTAINS(superseded.reason, as_explicit);
  const plugin_candidate lower = load_one(as_env, "CUPLUG_PLUGIN_PATH");
  BOOST_TEST(lower.outcome == state::duplicate);
  CHECK_CONTAINS(lower.reason, as_explicit);
}

BOOST_AUTO_TEST_CASE(refuses_plugins_others_can_write) {
  temp_dir dir;
  const fs::path copy = dir.copy_in(fake_plugin("good_rng"), "libwritable.so");
  ::chmod(copy.c_str(), 0757);
  const plugin_candidate c = load_one(copy.string());
  BOOST_TEST(c.outcome == state::rejected);
  BOOST_TEST(!c.has_manifest); // refused before the file was read
  CHECK_CONTAINS(c.reason, "plugin file " + copy.string() + " is writable by everyone");
  CHECK_CONTAINS(c.reason, "chmod o-w " + copy.string());

  // Fixed, it is tried again, and its diagnostic replaced rather than repeated.
  ::chmod(copy.c_str(), 0755);
  const plugin_candidate fixed = load_one(copy.string());
  BOOST_TEST(fixed.outcome != state::rejected, fixed.reason);
  int entries = 0;
  for (const auto &d : reg().diagnostics())
    entries += d.path == copy.string();
  BOOST_TEST(entries == 1);
}

BOOST_AUTO_TEST_CASE(refuses_plugins_in_folders_others_can_write) {
  temp_dir dir;
  const fs::path copy = dir.copy_in(fake_plugin("good_rng"), "libin_open_folder.so");
  ::chmod(dir.path().c_str(), 0777);
  const plugin_candidate c = load_one(copy.string());
  BOOST_TEST(c.outcome == state::rejected);
  CHECK_CONTAINS(c.reason, "folder " + dir.path().string());
  CHECK_CONTAINS(c.reason, "is writable by everyone (mode 0777)");
  CHECK_CONTAINS(c.reason, "chmod o-w " + dir.path().string());

  // A link placed in an open folder is refused too, though its target is safe.
  temp_dir safe, other;
  const fs::path target = safe.copy_in(fake_plugin("good_rng"), "libtarget.so");
  ::chmod(other.path().c_str(), 0777);
  const fs::path link = other.path() / "liblink.so";
  fs::create_symlink(target, link);
  const plugin_candidate linked = load_one(link.string());
  BOOST_TEST(linked.outcome == state::rejected);
  CHECK_CONTAINS(linked.reason, other.path().string() + " (on the way to the plugin file " +
                                    link.string() + ") is writable by everyone");

  // A sticky folder such as /tmp keeps others from swapping files, not from adding them: no
  // plugin is loaded straight from one.
  ::chmod(other.path().c_str(), 01777);
  const fs::path in_sticky = other.copy_in(fake_plugin("good_rng"), "libin_sticky.so");
  const plugin_candidate sticky = load_one(in_sticky.string());
  BOOST_TEST(sticky.outcome == state::rejected);
  CHECK_CONTAINS(sticky.reason, "holding the plugin file is writable by everyone (mode 1777)");
}

// Issue 13 item 1: the folder itself is safe, but whoever can write its parent can swap it.
BOOST_AUTO_TEST_CASE(refuses_plugins_below_a_folder_others_can_write) {
  temp_dir dir;
  fs::create_directories(dir.path() / "safe");
  ::chmod((dir.path() / "safe").c_str(), 0755);
  const fs::path copy = dir.copy_in(fake_plugin("good_rng"), "safe/libdeep.so");
  ::chmod(dir.path().c_str(), 0777);
  const plugin_candidate c = load_one(copy.string());
  BOOST_TEST(c.outcome == state::rejected);
  BOOST_TEST(!c.has_manifest); // refused before the file was read
  CHECK_CONTAINS(c.reason, "refused: the folder " + dir.path().string() +
                               " (on the way to the plugin file " + copy.string() +
                               ") is writable by everyone (mode 0777) and not sticky");
  // Below a sticky folder (as every test folder below /tmp is) it loads.
  ::chmod(dir.path().c_str(), 01777);
  const plugin_candidate fixed = load_one(copy.string());
  BOOST_TEST(fixed.outcome != state::rejected, fixed.reason);
}

// Issue 13 item 1: dlopen gets the descriptor that was checked, not the name again.
BOOST_AUTO_TEST_CASE(loads_the_file_it_checked_not_what_the_name_leads_to_afterwards) {
  temp_dir dir;
  const fs::path path = dir.copy_in(fake_plugin("good_allocator"), "libswapped.so");
  const fs::path other = dir.copy_in(fake_plugin("good_rng"), "libother.so");
  plugin_candidate c;
  c.path = path.string();
  detail::checked_file checked;
  BOOST_REQUIRE_EQUAL(detail::check_candidate(path, c, checked), "");
  BOOST_TEST(c.manifest.kind == static_cast<std::uint32_t>(plugin_kind::allocator));
  fs::rename(other, path); // the name now leads to another plugin
  detail::loaded_library loaded = detail::load_library(checked, c);
  BOOST_TEST(loaded.problem.empty(), loaded.problem);
  BOOST_REQUIRE(loaded.library);
  plugin_object *object = loaded.library->create()(options{});
  BOOST_TEST(dynamic_cast<allocator *>(object) != nullptr);
  loaded.library->destroy()(object);
}

// Issue 13 item 8: a FIFO named like a plugin is refused without being opened.
BOOST_AUTO_TEST_CASE(a_fifo_named_like_a_plugin_does_not_hang_the_loader) {
  temp_dir dir;
  const fs::path fifo = dir.path() / "libfifo.so";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0755) == 0);
  auto scan = std::async(std::launch::async, [&] { return reg().load(dir.path().string()); });
  if (scan.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int unblock = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK); // releases a blocked reader
    scan.wait();
    if (unblock >= 0)
      ::close(unblock);
    BOOST_ERROR("loading a folder with a FIFO in it blocked");
  }
  const plugin_candidate c = only(scan.get());
  BOOST_TEST(c.outcome == state::rejected);
  CHECK_CONTAINS(c.reason, fifo.string() + " is not a regular file (it is a FIFO)");
}

// Issue 13 item 16: a link to a device is not a plugin, whatever the device's mode; the old
// message advised `chmod o-w /dev/null`.
BOOST_AUTO_TEST_CASE(a_plugin_linked_to_a_device_is_said_not_to_be_a_regular_file) {
  temp_dir dir;
  const fs::path link = dir.path() / "libdevice.so";
  fs::create_symlink("/dev/null", link);
  const plugin_candidate c = load_one(link.string());
  BOOST_TEST(c.outcome == state::rejected);
  CHECK_CONTAINS(c.reason,
                 link.string() + " (/dev/null) is not a regular file (it is a character device)");
  BOOST_TEST(!test_support::contains(c.reason, "chmod"), c.reason);
}

// Issue 13 item 16: 7 bytes that start with the ELF magic are a truncated ELF file.
BOOST_AUTO_TEST_CASE(a_short_file_with_the_elf_magic_is_said_to_be_truncated) {
  temp_dir dir;
  const fs::path file = dir.write("libshort.so", std::string("\x7f"
                                                             "ELF\x02\x01\x01",
                                                             7));
  ::chmod(file.c_str(), 0755);
  const plugin_candidate c = load_one(file.string());
  BOOST_TEST(c.outcome == state::rejected);
  CHECK_CONTAINS(c.reason, "truncated");
  CHECK_CONTAINS(c.reason, "holds only 7 bytes");
  BOOST_TEST(!test_support::contains(c.reason, "does not start with"), c.reason);
}

BOOST_AUTO_TEST_CASE(refuses_plugins_of_other_owners_and_shared_groups) {
  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("not root: cannot give a file to another user; ownership check skipped");
    return;
  }
  temp_dir dir;
  const fs::path copy = dir.copy_in(fake_plugin("good_rng"), "libforeign.so");
  BOOST_REQUIRE(::chown(copy.c_str(), 65534, static_cast<gid_t>(-1)) == 0);
  const plugin_candidate c = load_one(copy.string());
  BOOST_TEST(c.outcome == state::rejected);
  CHECK_CONTAINS(c.reason, copy.string() + " is owned by ");
  CHECK_CONTAINS(c.reason, "not by root or by you");
  CHECK_CONTAINS(c.reason, "chown");

  // Group-writable is refused when the group is shared (not the owner's private group).
  BOOST_REQUIRE(::chown(copy.c_str(), 0, 65534) == 0);
  ::chmod(copy.c_str(), 0775);
  const plugin_candidate g = load_one(copy.string());
  BOOST_TEST(g.outcome == state::rejected);
  CHECK_CONTAINS(g.reason, "is writable by its group");
  CHECK_CONTAINS(g.reason, "chmod g-w " + copy.string());
}
