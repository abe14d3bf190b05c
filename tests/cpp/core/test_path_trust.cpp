// Tests core/src/path_trust.cpp, the one trust rule, and the compile cache folder that uses it.
#define BOOST_TEST_MODULE path_trust
#include <boost/test/included/unit_test.hpp>

#include "path_trust.hpp"
#include "test_support.hpp"

#include <cuplug/compile_cache.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>

namespace cuplug {
inline std::ostream &operator<<(std::ostream &os, disk_cache_status::state s) {
  return os << to_string(s);
}
} // namespace cuplug

using namespace cuplug;
using detail::open_trusted;
using detail::trust_rule;
using detail::trusted_path;
using test_support::temp_dir;
namespace fs = std::filesystem;

namespace {

constexpr uid_t nobody = 65534;

bool root() { return ::geteuid() == 0; }

trust_rule file_rule() {
  trust_rule rule;
  rule.what = "test file";
  return rule;
}

trust_rule dir_rule() {
  trust_rule rule;
  rule.expect = trust_rule::target::directory;
  rule.what = "test folder";
  rule.owner_must_be_me = true;
  rule.allow_private_group = false;
  return rule;
}

// open_trusted on another thread, so a walk that blocks (on a FIFO) fails the test instead of
// hanging it: after `seconds` the FIFO is opened for writing too, which releases the reader.
trusted_path open_with_deadline(const fs::path &path, const trust_rule &rule,
                                const fs::path &fifo) {
  auto walk = std::async(std::launch::async, [&] { return open_trusted(path.string(), rule); });
  if (walk.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int unblock = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    walk.wait();
    if (unblock >= 0)
      ::close(unblock);
    BOOST_ERROR("open_trusted(" << path << ") blocked on the FIFO " << fifo);
  }
  return walk.get();
}

// Sets an environment variable for one scope.
class scoped_env {
public:
  scoped_env(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~scoped_env() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  std::string old_;
  bool had_ = false;
};

} // namespace

BOOST_AUTO_TEST_CASE(opens_a_trusted_file_and_returns_what_it_checked) {
  temp_dir dir;
  const fs::path file = dir.write("f.txt", "hello");
  const trusted_path t = open_trusted(file.string(), file_rule());
  BOOST_TEST(t.problem.empty(), t.problem);
  BOOST_REQUIRE(t.fd);
  struct stat named {};
  BOOST_REQUIRE(::stat(file.c_str(), &named) == 0);
  BOOST_TEST(t.st.st_ino == named.st_ino);
  BOOST_TEST(t.real == file.string());
  char buffer[8] = {};
  BOOST_TEST(::read(t.fd.get(), buffer, sizeof buffer) == 5); // blocking reads work again
  BOOST_TEST((::fcntl(t.fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
}

BOOST_AUTO_TEST_CASE(refuses_relative_and_empty_paths) {
  const trusted_path rel = open_trusted("relative/f.txt", file_rule());
  CHECK_CONTAINS(rel.problem, "the test file 'relative/f.txt' is a relative path");
  CHECK_CONTAINS(rel.problem, "does not depend on the current directory");
  BOOST_TEST(!rel.fd);
  BOOST_TEST(!rel.unsafe);
  BOOST_TEST(!rel.missing);
  CHECK_CONTAINS(open_trusted("", file_rule()).problem, "no test file path given");
}

// Issue 13 item 1: a safe folder inside a world-writable, non-sticky one can be swapped.
BOOST_AUTO_TEST_CASE(refuses_a_world_writable_ancestor_unless_sticky) {
  temp_dir dir;
  fs::create_directories(dir.path() / "safe");
  const fs::path file = dir.write("safe/f.txt", "x");
  ::chmod(dir.path().c_str(), 0777);
  const trusted_path open_parent = open_trusted(file.string(), file_rule());
  BOOST_TEST(open_parent.unsafe);
  BOOST_TEST(!open_parent.fd);
  CHECK_CONTAINS(open_parent.problem, "the folder " + dir.path().string() +
                                          " (on the way to the test file " + file.string() +
                                          ") is writable by everyone (mode 0777) and not sticky");
  CHECK_CONTAINS(open_parent.problem, "chmod o-w " + dir.path().string());

  // Sticky, as /tmp is: others cannot rename or delete what they do not own there.
  ::chmod(dir.path().c_str(), 01777);
  const trusted_path sticky = open_trusted(file.string(), file_rule());
  BOOST_TEST(sticky.problem.empty(), sticky.problem);

  // Unless the rule wants the folder holding the file closed (plugin folders).
  trust_rule strict = file_rule();
  strict.strict_parent = true;
  const fs::path direct = dir.write("direct.txt", "x");
  const trusted_path in_sticky = open_trusted(direct.string(), strict);
  BOOST_TEST(in_sticky.unsafe);
  CHECK_CONTAINS(in_sticky.problem,
                 "the folder " + dir.path().string() +
                     " holding the test file is writable by everyone (mode 1777)");
  BOOST_TEST(open_trusted(file.string(), strict).problem.empty());
}

BOOST_AUTO_TEST_CASE(refuses_ancestors_and_links_of_other_users) {
  if (!root()) {
    BOOST_TEST_MESSAGE("not root: cannot give a folder to another user; check skipped");
    return;
  }
  temp_dir dir;
  fs::create_directories(dir.path() / "theirs" / "mine");
  const fs::path file = dir.write("theirs/mine/f.txt", "x");
  BOOST_REQUIRE(::chown((dir.path() / "theirs").c_str(), nobody, static_cast<gid_t>(-1)) == 0);
  const trusted_path foreign = open_trusted(file.string(), file_rule());
  BOOST_TEST(foreign.unsafe);
  CHECK_CONTAINS(foreign.problem, "the folder " + (dir.path() / "theirs").string());
  CHECK_CONTAINS(foreign.problem, "is owned by nobody, not by root or by you (root)");

  // A shared group that may write a folder on the way.
  BOOST_REQUIRE(::chown((dir.path() / "theirs").c_str(), 0, nobody) == 0);
  ::chmod((dir.path() / "theirs").c_str(), 0775);
  const trusted_path group = open_trusted(file.string(), file_rule());
  BOOST_TEST(group.unsafe);
  CHECK_CONTAINS(group.problem, "is writable by its group");
  CHECK_CONTAINS(group.problem, "chmod g-w " + (dir.path() / "theirs").string());
  ::chmod((dir.path() / "theirs").c_str(), 0755);
  BOOST_TEST(open_trusted(file.string(), file_rule()).problem.empty());

  // A link another user owns could be pointed elsewhere (in a sticky folder, by its owner),
  // whatever the host's protected_symlinks says.
  const fs::path link = dir.path() / "link.txt";
  fs::create_symlink(file, link);
  BOOST_REQUIRE(::lchown(link.c_str(), nobody, static_cast<gid_t>(-1)) == 0);
  const trusted_path linked = open_trusted(link.string(), file_rule());
  BOOST_TEST(linked.unsafe);
  CHECK_CONTAINS(linked.problem, "the symbolic link " + link.string());
  CHECK_CONTAINS(linked.problem, "is owned by nobody");

  // The file itself.
  BOOST_REQUIRE(::chown(file.c_str(), nobody, static_cast<gid_t>(-1)) == 0);
  const trusted_path theirs = open_trusted(file.string(), file_rule());
  BOOST_TEST(theirs.unsafe);
  CHECK_CONTAINS(theirs.problem, "the test file " + file.string() + " is owned by nobody");
}

BOOST_AUTO_TEST_CASE(follows_links_and_dot_dot_checking_every_folder_on_the_way) {
  temp_dir dir;
  fs::create_directories(dir.path() / "a" / "b");
  fs::create_directories(dir.path() / "open" / "inner");
  const fs::path file = dir.write("a/b/f.txt", "x");
  fs::create_symlink("../a/b", dir.path() / "open" / "to_b"); // relative link
  const fs::path via_link = dir.path() / "open" / "to_b" / "f.txt";
  const trusted_path t = open_trusted(via_link.string(), file_rule());
  BOOST_TEST(t.problem.empty(), t.problem);
  BOOST_TEST(t.real == file.string());
  const fs::path dotted = dir.path() / "open" / "inner" / ".." / ".." / "a" / "." / "b" / "f.txt";
  BOOST_TEST(open_trusted(dotted.string(), file_rule()).real == file.string());

  // The folder holding the link is where it can be swapped: checked although the target is not
  // under it.
  ::chmod((dir.path() / "open").c_str(), 0777);
  const trusted_path swapped = open_trusted(via_link.string(), file_rule());
  BOOST_TEST(swapped.unsafe);
  CHECK_CONTAINS(swapped.problem, (dir.path() / "open").string() + " (on the way");
}

BOOST_AUTO_TEST_CASE(link_loops_and_missing_names) {
  temp_dir dir;
  fs::create_symlink(dir.path() / "loop_b", dir.path() / "loop_a");
  fs::create_symlink(dir.path() / "loop_a", dir.path() / "loop_b");
  const trusted_path loop = open_trusted((dir.path() / "loop_a").string(), file_rule());
  CHECK_CONTAINS(loop.problem, "too many symbolic links");
  BOOST_TEST(!loop.unsafe);

  const trusted_path missing = open_trusted((dir.path() / "no" / "such").string(), file_rule());
  BOOST_TEST(missing.missing);
  BOOST_TEST(!missing.unsafe);
  CHECK_CONTAINS(missing.problem, "No such file");

  dir.write("plain", "x");
  const trusted_path through_file =
      open_trusted((dir.path() / "plain" / "f.txt").string(), file_rule());
  CHECK_CONTAINS(through_file.problem, "is a regular file, not a folder");
}

// Issue 13 items 8 and 16: the type is checked before any open, so a FIFO does not hang and a
// device is called what it is (its mode says nothing about whether it is a plugin).
BOOST_AUTO_TEST_CASE(refuses_fifos_and_devices_before_opening_them) {
  temp_dir dir;
  const fs::path fifo = dir.path() / "pipe";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const trusted_path f = open_with_deadline(fifo, file_rule(), fifo);
  CHECK_CONTAINS(f.problem,
                 "the test file " + fifo.string() + " is not a regular file (it is a FIFO)");
  BOOST_TEST(!f.fd);

  const fs::path dev = dir.path() / "dev";
  fs::create_symlink("/dev/null", dev);
  const trusted_path d = open_trusted(dev.string(), file_rule());
  CHECK_CONTAINS(d.problem, "the test file " + dev.string() +
                                " (/dev/null) is not a regular file (it is a character device)");
  BOOST_TEST(!test_support::contains(d.problem, "chmod"));

  CHECK_CONTAINS(open_trusted(dir.path().string(), file_rule()).problem,
                 "is not a regular file (it is a folder)");
  CHECK_CONTAINS(open_trusted(dir.write("f", "x").string(), dir_rule()).problem,
                 "is not a folder (it is a regular file)");
}

BOOST_AUTO_TEST_CASE(folders_that_only_this_user_may_own) {
  temp_dir dir;
  const trusted_path mine = open_trusted(dir.path().string(), dir_rule());
  BOOST_TEST(mine.problem.empty(), mine.problem);
  BOOST_REQUIRE(mine.fd);
  BOOST_TEST(S_ISDIR(mine.st.st_mode));
  fs::create_directories(dir.path() / "shared");
  ::chmod((dir.path() / "shared").c_str(), 0770);
  const trusted_path group = open_trusted((dir.path() / "shared").string(), dir_rule());
  BOOST_TEST(group.unsafe); // even the owner's private group: the rule says so
  CHECK_CONTAINS(group.problem, "is writable by its group");
  if (root()) {
    fs::create_directories(dir.path() / "rootless");
    BOOST_REQUIRE(::chown((dir.path() / "rootless").c_str(), 4242, 4242) == 0);
    const trusted_path other = open_trusted((dir.path() / "rootless").string(), dir_rule());
    BOOST_TEST(other.unsafe);
    CHECK_CONTAINS(other.problem, "is owned by uid 4242, not by you (root)");
  }
}

// Issue 13 item 3: HOME=. must not make the current directory the home.
BOOST_AUTO_TEST_CASE(a_relative_home_is_not_used) {
  {
    scoped_env home("HOME", ".");
    const std::string h = detail::user_home();
    BOOST_TEST((h.empty() || h[0] == '/'), h);
    const std::string cache = compile_cache::default_directory();
    BOOST_TEST((cache.empty() || cache[0] == '/'), cache);
  }
  scoped_env home("HOME", "/home/someone");
  BOOST_TEST(detail::user_home() == "/home/someone");
}

// Issue 13 item 3: the cache folder goes through the same rule, links included.
BOOST_AUTO_TEST_CASE(the_cache_folder_follows_the_same_rule) {
  temp_dir dir;
  const disk_cache_status rel = compile_cache::instance().disk_status("relative/cache");
  BOOST_TEST(rel.state_ == disk_cache_status::state::unusable);
  CHECK_CONTAINS(rel.reason, "'relative/cache' is a relative path");

  // Created when missing under trusted folders, as before.
  const fs::path fresh = dir.path() / "new" / "cache";
  BOOST_TEST(compile_cache::instance().disk_status(fresh.string()).state_ ==
             disk_cache_status::state::usable);
  BOOST_TEST(fs::is_directory(fresh / compile_cache::entries_subdir));

  // A safe folder inside an open one.
  fs::create_directories(dir.path() / "open" / "cache");
  ::chmod((dir.path() / "open" / "cache").c_str(), 0700);
  ::chmod((dir.path() / "open").c_str(), 0777);
  const disk_cache_status open =
      compile_cache::instance().disk_status((dir.path() / "open" / "cache").string());
  BOOST_TEST(open.state_ == disk_cache_status::state::unsafe);
  CHECK_CONTAINS(open.reason, "writable by everyone");

  if (!root()) {
    BOOST_TEST_MESSAGE("not root: cannot give a link to another user; link check skipped");
    return;
  }
  // CUPLUG_CACHE_DIR=<a link another user owns>: refused, and nothing created where it points.
  fs::create_directories(dir.path() / "target");
  const fs::path link = dir.path() / "link";
  fs::create_symlink(dir.path() / "target", link);
  BOOST_REQUIRE(::lchown(link.c_str(), nobody, static_cast<gid_t>(-1)) == 0);
  const disk_cache_status linked = compile_cache::instance().disk_status(link.string());
  BOOST_TEST(linked.state_ == disk_cache_status::state::unsafe);
  CHECK_CONTAINS(linked.reason, "the symbolic link " + link.string());
  const disk_cache_status below = compile_cache::instance().disk_status((link / "sub").string());
  BOOST_TEST(below.state_ == disk_cache_status::state::unsafe);
  BOOST_TEST(!fs::exists(dir.path() / "target" / "sub"));
  BOOST_TEST(!fs::exists(dir.path() / "target" / compile_cache::entries_subdir));
}
