// Walks a path from "/" one name at a time and opens what it leads to if nobody else can change it.
#include "path_trust.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

namespace cuplug::detail {

unique_fd &unique_fd::operator=(unique_fd &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

unique_fd::~unique_fd() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string user_name(uid_t uid) {
  char buffer[4096];
  passwd pw{}, *found = nullptr;
  if (getpwuid_r(uid, &pw, buffer, sizeof buffer, &found) == 0 && found != nullptr)
    return found->pw_name;
  return "uid " + std::to_string(uid);
}

std::string user_home() {
  if (const char *home = std::getenv("HOME"); home != nullptr && home[0] == '/')
    return home;
  char buffer[4096];
  passwd pw{}, *found = nullptr;
  if (getpwuid_r(::geteuid(), &pw, buffer, sizeof buffer, &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] == '/')
    return found->pw_dir;
  return {};
}

namespace {

// Symbolic links followed in one walk before it is called a loop (Linux's MAXSYMLINKS).
constexpr int max_links = 40;

std::string group_name(gid_t gid) {
  char buffer[16384];
  group gr{}, *found = nullptr;
  if (getgrgid_r(gid, &gr, buffer, sizeof buffer, &found) == 0 && found != nullptr)
    return found->gr_name;
  return "gid " + std::to_string(gid);
}

// A group that only its owner can be in (Debian/Ubuntu "user private groups", umask 002): group
// write permission then grants nobody else anything.
bool private_group_of(gid_t gid, uid_t owner) {
  char pw_buffer[4096], gr_buffer[16384];
  passwd pw{}, *pw_found = nullptr;
  group gr{}, *gr_found = nullptr;
  if (getpwuid_r(owner, &pw, pw_buffer, sizeof pw_buffer, &pw_found) != 0 || pw_found == nullptr)
    return false;
  if (getgrgid_r(gid, &gr, gr_buffer, sizeof gr_buffer, &gr_found) != 0 || gr_found == nullptr)
    return false;
  const bool no_other_members =
      gr.gr_mem == nullptr || gr.gr_mem[0] == nullptr ||
      (gr.gr_mem[1] == nullptr && std::strcmp(gr.gr_mem[0], pw.pw_name) == 0);
  return pw.pw_gid == gid && std::strcmp(gr.gr_name, pw.pw_name) == 0 && no_other_members;
}

std::string octal_mode(mode_t mode) {
  char out[8];
  std::snprintf(out, sizeof out, "%04o", static_cast<unsigned>(mode & 07777));
  return out;
}

// What kind of file `mode` is, for messages ("a folder", "a FIFO", ...).
const char *file_kind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISREG(mode))
    return "a regular file";
  return "of an unknown type";
}

// One walk: the folders entered so far (open with O_PATH), and the checks and messages.
class walker {
public:
  walker(const std::string &path, const trust_rule &rule) : path_(path), rule_(rule) {}

  trusted_path run() {
    if (path_.empty())
      return fail(std::string("no ") + rule_.what + " path given");
    if (path_[0] != '/')
      return fail(std::string("the ") + rule_.what + " '" + path_ +
                  "' is a relative path; cuplug only uses absolute paths, so that what it "
                  "reads does not depend on the current directory: give an absolute path");
    unique_fd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    struct stat st {};
    if (!root || ::fstat(root.get(), &st) != 0)
      return fail(std::string("cannot open /: ") + std::strerror(errno));
    if (std::string why = folder_problem("/", st); !why.empty())
      return unsafe(why);
    dirs_.push_back(std::move(root));
    push_components(path_);

    int links = 0;
    while (!todo_.empty()) {
      const std::string name = todo_.front();
      todo_.pop_front();
      if (name.empty() || name == ".")
        continue;
      if (name == "..") {
        // The parent of a folder already checked was checked before it.
        if (dirs_.size() > 1) {
          dirs_.pop_back();
          names_.pop_back();
        }
        continue;
      }
      const bool last = !more_names();
      const std::string here = join(name);
      if (::fstatat(dirs_.back().get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        const int e = errno;
        trusted_path out =
            fail("cannot inspect " + here + on_the_way(here) + ": " + std::strerror(e));
        out.missing = e == ENOENT;
        return out;
      }
      if (S_ISLNK(st.st_mode)) {
        if (++links > max_links)
          return fail("too many symbolic links on the way to the " + std::string(rule_.what) + " " +
                      path_ + " (a loop?)");
        if (std::string why = link_problem(here, st); !why.empty())
          return unsafe(why);
        std::string target(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4095) + 1, '\0');
        const ssize_t n =
            ::readlinkat(dirs_.back().get(), name.c_str(), target.data(), target.size());
        if (n <= 0 || static_cast<std::size_t>(n) >= target.size())
          return fail("cannot read the link " + here + ": " +
                      (n < 0 ? std::strerror(errno) : "it is empty or changed while read"));
        target.resize(static_cast<std::size_t>(n));
        if (target[0] == '/') {
          dirs_.resize(1);
          names_.clear();
        }
        push_components(target);
        continue;
      }
      if (!last) {
        if (!S_ISDIR(st.st_mode))
          return fail(here + on_the_way(here) + " is " + file_kind(st.st_mode) + ", not a folder");
        unique_fd dir(::openat(dirs_.back().get(), name.c_str(),
                               O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        struct stat opened {};
        if (!dir || ::fstat(dir.get(), &opened) != 0)
          return fail("cannot open " + here + ": " + std::strerror(errno));
        if (opened.st_dev != st.st_dev || opened.st_ino != st.st_ino)
          return fail(here + " changed while cuplug was checking it; try again");
        if (std::string why = folder_problem(here, opened); !why.empty())
          return unsafe(why);
        dirs_.push_back(std::move(dir));
        names_.push_back(name);
        continue;
      }
      return open_last(name, here, st);
    }
    // The path ended at a folder already entered ("/", "/a/.."): look its name up again from
    // its parent, so it is checked and opened like any last name.
    if (dirs_.size() == 1) {
      if (::fstat(dirs_.back().get(), &st) != 0)
        return fail(std::string("cannot inspect /: ") + std::strerror(errno));
      return open_last(".", "/", st);
    }
    const std::string name = names_.back();
    dirs_.pop_back();
    names_.pop_back();
    if (::fstatat(dirs_.back().get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return fail("cannot inspect " + join(name) + ": " + std::strerror(errno));
    return open_last(name, join(name), st);
  }

private:
  trusted_path open_last(const std::string &name, const std::string &here,
                         const struct stat &seen) {
    const bool want_file = rule_.expect == trust_rule::target::regular_file;
    const std::string shown = here == path_ ? path_ : path_ + " (" + here + ")";
    // The type first, and before any open: a FIFO would block, a device may act on open, and
    // a device's permissions say nothing about whether it is a plugin or a config file.
    if (want_file && !S_ISREG(seen.st_mode))
      return fail(std::string("the ") + rule_.what + " " + shown +
                  " is not a regular file (it is " + file_kind(seen.st_mode) + ")");
    if (!want_file && !S_ISDIR(seen.st_mode))
      return fail(std::string("the ") + rule_.what + " " + shown + " is not a folder (it is " +
                  file_kind(seen.st_mode) + ")");
    if (rule_.strict_parent && dirs_.size() > 1) {
      struct stat parent {};
      if (::fstat(dirs_.back().get(), &parent) == 0)
        if (std::string why = strict_parent_problem(join_parent(), parent); !why.empty())
          return unsafe(why);
    }
    const int flags = want_file ? O_RDONLY | O_NONBLOCK | O_NOCTTY : O_PATH | O_DIRECTORY;
    unique_fd fd(::openat(dirs_.back().get(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
    trusted_path out;
    if (!fd || ::fstat(fd.get(), &out.st) != 0)
      return fail("cannot open the " + std::string(rule_.what) + " " + shown + ": " +
                  std::strerror(errno));
    if (out.st.st_dev != seen.st_dev || out.st.st_ino != seen.st_ino ||
        (out.st.st_mode & S_IFMT) != (seen.st_mode & S_IFMT))
      return fail("the " + std::string(rule_.what) + " " + shown +
                  " changed while cuplug was checking it; try again");
    if (std::string why = object_problem(shown, here, out.st); !why.empty())
      return unsafe(why);
    // Regular files are read normally from here on; O_NONBLOCK only guarded the open.
    if (want_file)
      ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    out.fd = std::move(fd);
    out.real = here;
    return out;
  }

  // Whether `uid` may own something on the path: root or the current user.
  bool trusted_owner(uid_t uid) const { return uid == 0 || uid == me_; }

  std::string owner_problem(const std::string &subject, const std::string &p, uid_t owner,
                            const char *consequence, const char *fix) const {
    return subject + " is owned by " + user_name(owner) + ", not by root or by you (" +
           user_name(me_) + "), so its owner could " + consequence + ": " + fix + " chown " +
           user_name(me_) + " " + p;
  }

  // A folder some name is looked up in.
  std::string folder_problem(const std::string &p, const struct stat &st) const {
    const std::string subject = "the folder " + p + on_the_way(p);
    if (!trusted_owner(st.st_uid))
      return owner_problem(subject, p, st.st_uid, "replace what it holds", "run");
    const bool sticky = (st.st_mode & S_ISVTX) != 0;
    if ((st.st_mode & S_IWOTH) != 0 && !sticky)
      return subject + " is writable by everyone (mode " + octal_mode(st.st_mode) +
             ") and not sticky, so anyone could replace what it holds: run chmod o-w " + p +
             " (or chmod +t " + p + ")";
    if ((st.st_mode & S_IWGRP) != 0 && !sticky && !group_ok(st))
      return subject + " is writable by its group " + group_name(st.st_gid) + " (mode " +
             octal_mode(st.st_mode) +
             "), so other users could replace what it holds: run "
             "chmod g-w " +
             p;
    return {};
  }

  // The folder holding the object, when even a sticky one is too open (plugin folders).
  std::string strict_parent_problem(const std::string &p, const struct stat &st) const {
    if ((st.st_mode & S_IWOTH) != 0)
      return "the folder " + p + " holding the " + rule_.what + " is writable by everyone (mode " +
             octal_mode(st.st_mode) + "), so anyone could add files to it: run chmod o-w " + p +
             ", or move the " + rule_.what + " to a folder only you and root can write";
    if ((st.st_mode & S_IWGRP) != 0 && !group_ok(st))
      return "the folder " + p + " holding the " + rule_.what + " is writable by its group " +
             group_name(st.st_gid) + " (mode " + octal_mode(st.st_mode) +
             "), so other users could add files to it: run chmod g-w " + p;
    return {};
  }

  std::string link_problem(const std::string &p, const struct stat &st) const {
    if (trusted_owner(st.st_uid))
      return {};
    return "the symbolic link " + p + on_the_way(p) + " is owned by " + user_name(st.st_uid) +
           ", not by root or by you (" + user_name(me_) +
           "), so its owner could point it elsewhere: replace it with a link you own";
  }

  // The file or folder the path ends at.
  std::string object_problem(const std::string &shown, const std::string &here,
                             const struct stat &st) const {
    const std::string subject = std::string("the ") + rule_.what + " " + shown;
    const bool file = rule_.expect == trust_rule::target::regular_file;
    const char *consequence = file ? "change it" : "replace what it holds";
    if (rule_.owner_must_be_me && st.st_uid != me_)
      return subject + " is owned by " + user_name(st.st_uid) + ", not by you (" + user_name(me_) +
             "), so its owner could " + consequence + ": use a folder of your own";
    if (!trusted_owner(st.st_uid))
      return owner_problem(subject, here, st.st_uid, consequence,
                           "move it to a folder you own, or run");
    if ((st.st_mode & S_IWOTH) != 0)
      return subject + " is writable by everyone (mode " + octal_mode(st.st_mode) +
             "), so anyone could " + consequence + ": run chmod o-w " + here;
    if ((st.st_mode & S_IWGRP) != 0 && !(rule_.allow_private_group && group_ok(st)))
      return subject + " is writable by its group " + group_name(st.st_gid) + " (mode " +
             octal_mode(st.st_mode) + "), so other users could " + consequence +
             ": run chmod g-w " + here;
    return {};
  }

  bool group_ok(const struct stat &st) const {
    return rule_.allow_private_group && private_group_of(st.st_gid, st.st_uid);
  }

  // " (on the way to the plugin file /x/liby.so)" when `p` is not the path itself.
  std::string on_the_way(const std::string &p) const {
    return p == path_ ? std::string()
                      : " (on the way to the " + std::string(rule_.what) + " " + path_ + ")";
  }

  bool more_names() const {
    for (const std::string &n : todo_)
      if (!n.empty() && n != ".")
        return true;
    return false;
  }

  void push_components(const std::string &p) {
    std::deque<std::string> parts;
    std::size_t start = 0;
    while (start <= p.size()) {
      const std::size_t slash = p.find('/', start);
      const std::size_t end = slash == std::string::npos ? p.size() : slash;
      if (end > start)
        parts.push_back(p.substr(start, end - start));
      if (slash == std::string::npos)
        break;
      start = slash + 1;
    }
    todo_.insert(todo_.begin(), parts.begin(), parts.end());
  }

  // The resolved path of `name` in the current folder ("" for the folder itself).
  std::string join(const std::string &name) const {
    std::string out;
    for (const std::string &n : names_)
      out += "/" + n;
    if (!name.empty())
      out += "/" + name;
    return out.empty() ? "/" : out;
  }
  std::string join_parent() const { return join(""); }

  trusted_path fail(std::string why) const {
    trusted_path out;
    out.problem = std::move(why);
    return out;
  }
  trusted_path unsafe(std::string why) const {
    trusted_path out = fail(std::move(why));
    out.unsafe = true;
    return out;
  }

  const std::string &path_;
  const trust_rule &rule_;
  const uid_t me_ = ::geteuid();
  std::vector<unique_fd> dirs_; // dirs_[0] is "/", then one per entry of names_
  std::vector<std::string> names_;
  std::deque<std::string> todo_;
};

} // namespace

trusted_path open_trusted(const std::string &path, const trust_rule &rule) {
  return walker(path, rule).run();
}

} // namespace cuplug::detail
