// Helpers shared by the core's C++ tests: fake plugin paths, temporary folders, candidate lookup.
#pragma once

#include <cuplug/allocator.hpp>
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

// Printers so BOOST_TEST can show the core's enums when a comparison fails (found by ADL).
namespace cuplug {
inline std::ostream &operator<<(std::ostream &os, plugin_candidate::state s) {
  return os << to_string(s);
}
inline std::ostream &operator<<(std::ostream &os, plugin_kind k) { return os << to_string(k); }
inline std::ostream &operator<<(std::ostream &os, memory_kind k) { return os << to_string(k); }
inline std::ostream &operator<<(std::ostream &os, config_source s) { return os << to_string(s); }
inline std::ostream &operator<<(std::ostream &os, error_class c) {
  return os << static_cast<int>(c);
}
} // namespace cuplug

namespace test_support {
namespace fs = std::filesystem;

// <build>/tests/fake_plugins/libfake_<name>.so
inline std::string fake_plugin(const std::string &name) {
  return std::string(CUPLUG_FAKE_PLUGIN_DIR) + "/libfake_" + name + ".so";
}

// Options from a literal map ({{"k", "v"}} alone would be ambiguous between options' constructors).
inline cuplug::options opts(std::map<std::string, std::string> values) {
  return cuplug::options(std::move(values));
}

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Checks that `text` holds every one of `parts`, printing the text when it does not.
#define CHECK_CONTAINS(text, part)                                                                 \
  BOOST_CHECK_MESSAGE(::test_support::contains((text), (part)),                                    \
                      "expected \"" << (part) << "\" in: " << (text))

// A private folder under the system temp dir, removed (with what is in it) at scope exit.
class temp_dir {
public:
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "cuplug-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    // Undo any chmod the test made so removal works.
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::replace, ec);
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir &) = delete;
  temp_dir &operator=(const temp_dir &) = delete;
  const fs::path &path() const { return path_; }
  // Copies `file` in under `name` (mode 0755) and returns the copy's path.
  fs::path copy_in(const std::string &file, const std::string &name) const {
    const fs::path to = path_ / name;
    fs::copy_file(file, to, fs::copy_options::overwrite_existing);
    ::chmod(to.c_str(), 0755);
    return to;
  }
  fs::path write(const std::string &name, const std::string &bytes) const {
    const fs::path to = path_ / name;
    std::ofstream(to, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return to;
  }

private:
  fs::path path_;
};

inline std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The only candidate of `result` (a load() of one file).
inline cuplug::plugin_candidate only(const std::vector<cuplug::plugin_candidate> &result) {
  BOOST_REQUIRE_EQUAL(result.size(), 1u);
  return result.front();
}

// The candidate recorded for `path` in the registry's diagnostics.
inline cuplug::plugin_candidate diagnostic_for(const std::string &path) {
  for (const auto &c : cuplug::registry::instance().diagnostics())
    if (c.path == path)
      return c;
  BOOST_FAIL("no diagnostic for " << path);
  return {};
}

} // namespace test_support
