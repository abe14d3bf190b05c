// Discovery: the folders and files the registry is asked to look at, from CUPLUG_PLUGIN_PATH,
// the package and explicit loads. Nothing here opens or trusts a file (plugin_loader.cpp does).
#include "registry_discovery.hpp"

#include <cuplug/printable.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace fs = std::filesystem;

namespace cuplug::detail {

std::vector<search_entry> default_search_path() {
  std::vector<search_entry> out;
  if (const char *env = std::getenv("CUPLUG_PLUGIN_PATH")) {
    std::stringstream entries(env);
    std::string item;
    while (std::getline(entries, item, ':')) {
      if (item.empty())
        continue;
      search_entry e{item, "CUPLUG_PLUGIN_PATH", ""};
      if (!fs::path(item).is_absolute())
        e.problem = "CUPLUG_PLUGIN_PATH entry '" + printable(item) +
                    "' is a relative path; only absolute paths are searched, so that what loads "
                    "does not depend on the current directory: write it as an absolute path";
      out.push_back(std::move(e));
    }
  }
  const fs::path dir = fs::path(package_plugin_dir()).parent_path();
  for (const fs::path &folder : {dir / "plugins", dir / "cuplug" / "plugins"}) {
    std::error_code ec;
    if (fs::is_directory(folder, ec))
      out.push_back({folder.string(), "package", ""});
  }
  return out;
}

candidate_files find_candidates(const std::string &path, const std::string &source) {
  candidate_files out;
  std::error_code ec;
  out.given = fs::absolute(path, ec).lexically_normal();
  // Control characters of the path (from CUPLUG_PLUGIN_PATH, say) are shown escaped.
  const std::string shown = "'" + printable(path) + "'";
  const std::string origin =
      source == "CUPLUG_PLUGIN_PATH" ? "CUPLUG_PLUGIN_PATH entry " + shown : shown;
  if (path.empty()) {
    out.problem = "empty plugin path: give a plugin file or a folder of lib*.so plugins";
    return out;
  }
  if (ec || !fs::exists(out.given, ec)) {
    out.problem = origin + " does not exist: give a plugin file or a folder of lib*.so plugins";
    return out;
  }
  if (!fs::is_directory(out.given, ec)) {
    out.files.push_back(out.given);
    return out;
  }
  for (fs::directory_iterator it(out.given, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 6 && name.compare(0, 3, "lib") == 0 &&
        name.compare(name.size() - 3, 3, ".so") == 0 && !fs::is_directory(it->path()))
      out.files.push_back(it->path());
  }
  if (ec) {
    out.files.clear();
    out.problem = "cannot list the folder " + printable(out.given.string()) + ": " + ec.message();
    return out;
  }
  std::sort(out.files.begin(), out.files.end());
  return out;
}

std::string package_plugin_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&package_plugin_dir), &info) == 0 ||
      info.dli_fname == nullptr)
    return "plugins";
  // Loaded through a runpath such as $ORIGIN/../lib, the name has ".." in it: resolve it (as
  // the loader did, symbolic links included), so that the folder reads as users find it.
  fs::path library = fs::absolute(info.dli_fname);
  if (library.string().find("/../") != std::string::npos) {
    std::error_code resolve_error;
    fs::path resolved = fs::weakly_canonical(library, resolve_error);
    library = resolve_error ? library.lexically_normal() : resolved;
  }
  const fs::path lib_dir = library.parent_path();
  // Build tree and wheel: <pkg>/lib/libcuplug_core.so + <pkg>/plugins; CMake install:
  // <prefix>/lib/libcuplug_core.so + <prefix>/lib/cuplug/plugins; a core with plugins/ beside
  // it (an older layout, or a folder assembled by hand) keeps those.
  std::error_code ec;
  if (fs::is_directory(lib_dir / "plugins", ec))
    return (lib_dir / "plugins").string();
  if (fs::is_directory(lib_dir / "cuplug" / "plugins", ec))
    return (lib_dir / "cuplug" / "plugins").string();
  if (lib_dir.filename() == "lib" && fs::is_directory(lib_dir.parent_path() / "plugins", ec))
    return (lib_dir.parent_path() / "plugins").string();
  return (lib_dir / "plugins").string();
}

} // namespace cuplug::detail
