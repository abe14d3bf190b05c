// The compile cache: request hashing, content keys, the in-memory LRU and the on-disk store.
#include <cuplug/compile_cache.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>

namespace cuplug {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4). Self-contained on purpose: the Boost versions we must build with (1.74,
// 1.83) have no public SHA-256 (Boost.Hash2 arrived in 1.86), and OpenSSL would make the core
// link a crypto library for one hash. Tested against the FIPS vectors in test_compile_cache.cpp.
namespace {

class sha256 {
public:
  void update(const void *data, std::size_t n) {
    auto p = static_cast<const unsigned char *>(data);
    total_ += n;
    if (fill_ != 0) {
      std::size_t take = std::min(n, sizeof(block_) - fill_);
      std::memcpy(block_ + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ == sizeof(block_)) {
        compress(block_);
        fill_ = 0;
      }
    }
    for (; n >= 64; n -= 64, p += 64)
      compress(p);
    if (n != 0) {
      std::memcpy(block_, p, n);
      fill_ = n;
    }
  }
  void update(std::string_view s) { update(s.data(), s.size()); }
  // A field with its length in front, so that ("ab","c") and ("a","bc") hash differently.
  void field(std::string_view s) {
    std::uint64_t n = s.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
      len[i] = static_cast<unsigned char>(n >> (8 * i));
    update(len, 8);
    update(s);
  }

  std::array<unsigned char, 32> finish() {
    std::uint64_t bits = total_ * 8;
    unsigned char pad = 0x80;
    update(&pad, 1);
    unsigned char zero = 0;
    while (fill_ != 56)
      update(&zero, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
      len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(len, 8);
    std::array<unsigned char, 32> out{};
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j)
        out[4 * i + j] = static_cast<unsigned char>(h_[i] >> (24 - 8 * j));
    return out;
  }

  std::string hex() {
    static const char digits[] = "0123456789abcdef";
    auto d = finish();
    std::string s(64, '0');
    for (int i = 0; i < 32; ++i) {
      s[2 * i] = digits[d[i] >> 4];
      s[2 * i + 1] = digits[d[i] & 15];
    }
    return s;
  }

private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void compress(const unsigned char *p) {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (std::uint32_t(p[4 * i]) << 24) | (std::uint32_t(p[4 * i + 1]) << 16) |
             (std::uint32_t(p[4 * i + 2]) << 8) | std::uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6],
                  h = h_[7];
    for (int i = 0; i < 64; ++i) {
      std::uint32_t t1 =
          h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

  std::uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64];
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
};

bool read_file(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

long long mtime_ns(const struct stat &st) {
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

std::string trim(const std::string &s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The (quoted?, name) of every `#include "x"` / `#include <x>` line.
std::vector<std::pair<bool, std::string>> include_lines(const std::string &text) {
  std::vector<std::pair<bool, std::string>> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::size_t p = pos;
    auto skip_blanks = [&] {
      while (p < end && (text[p] == ' ' || text[p] == '\t'))
        ++p;
    };
    skip_blanks();
    if (p < end && text[p] == '#') {
      ++p;
      skip_blanks();
      if (text.compare(p, 7, "include") == 0) {
        p += 7;
        skip_blanks();
        if (p < end && (text[p] == '"' || text[p] == '<')) {
          char close = text[p] == '"' ? '"' : '>';
          std::size_t q = text.find(close, p + 1);
          if (q != std::string::npos && q < end && q > p + 1)
            out.emplace_back(close == '"', text.substr(p + 1, q - p - 1));
        }
      }
    }
    pos = end + 1;
  }
  return out;
}

bool is_regular_file(const std::string &path, struct stat &st) {
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace

std::string sha256_hex(std::string_view data) {
  sha256 h;
  h.update(data);
  return h.hex();
}

// ---------------------------------------------------------------------------------------------
// Architectures.

gpu_arch parse_arch(const std::string &text) {
  std::string t = trim(text);
  std::string digits = t;
  for (const char *prefix : {"sm_", "compute_", "lto_", "sm", "compute"}) {
    if (starts_with(t, prefix)) {
      digits = t.substr(std::strlen(prefix));
      break;
    }
  }
  gpu_arch out;
  auto bad = [&] {
    return config_error("'" + text +
                        "' is not a GPU architecture; use e.g. sm_90, compute_90, 90 or 9.0");
  };
  if (auto dot = digits.find('.'); dot != std::string::npos) { // "9.0" compute capability
    std::string major = digits.substr(0, dot), minor = digits.substr(dot + 1);
    if (major.empty() || minor.size() != 1 || !std::isdigit((unsigned char)minor[0]) ||
        major.find_first_not_of("0123456789") != std::string::npos)
      throw bad();
    out.number = std::stoi(major) * 10 + (minor[0] - '0');
    return out;
  }
  std::size_t n = 0;
  while (n < digits.size() && std::isdigit((unsigned char)digits[n]))
    ++n;
  if (n == 0 || n > 4)
    throw bad();
  out.number = std::stoi(digits.substr(0, n));
  out.suffix = digits.substr(n);
  if (!(out.suffix.empty() || out.suffix == "a" || out.suffix == "f") || out.number < 10)
    throw bad();
  return out;
}

arch_choice choose_arch(int device_arch, const std::vector<int> &supported,
                        const std::string &compiler_id) {
  if (supported.empty())
    throw config_error(compiler_id + " reports no supported GPU architectures");
  auto text = [](int a) { return "sm_" + std::to_string(a); };
  arch_choice c;
  int best = 0;
  for (int a : supported)
    if (a <= device_arch)
      best = std::max(best, a);
  if (best == 0)
    throw config_error("the device's architecture " + text(device_arch) +
                       " is older than the oldest " + compiler_id + " supports (" +
                       text(*std::min_element(supported.begin(), supported.end())) +
                       "); use an older CUDA toolkit, or pass arch= explicitly");
  c.arch = best;
  c.clamped = best != device_arch;
  c.use_ptx = best / 10 != device_arch / 10;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Headers and options.

std::vector<included_header> find_included_headers(const std::string &source,
                                                   const std::vector<std::string> &include_dirs) {
  std::vector<included_header> found;
  if (include_dirs.empty())
    return found;
  // Cycles and diamonds: each file once. Bounded so a pathological tree cannot hang a compile.
  constexpr std::size_t max_headers = 20000;
  std::set<std::string> seen;

  std::function<void(const std::string &, const std::string &, const std::string &)> scan;
  scan = [&](const std::string &text, const std::string &own_dir, const std::string &own_rel_dir) {
    for (const auto &[quoted, name] : include_lines(text)) {
      if (found.size() >= max_headers)
        return;
      std::string path, rel;
      struct stat st {};
      fs::path np(name);
      if (np.is_absolute()) {
        if (is_regular_file(name, st))
          path = rel = name;
      } else {
        if (quoted && !own_dir.empty()) {
          std::string candidate = (fs::path(own_dir) / np).string();
          if (is_regular_file(candidate, st)) {
            path = candidate;
            rel = (fs::path(own_rel_dir) / np).lexically_normal().string();
          }
        }
        for (std::size_t i = 0; path.empty() && i < include_dirs.size(); ++i) {
          std::string candidate = (fs::path(include_dirs[i]) / np).string();
          if (is_regular_file(candidate, st)) {
            path = candidate;
            rel = np.lexically_normal().string();
          }
        }
      }
      if (path.empty())
        continue; // a toolkit or system header: keyed by the compiler version
      std::string canonical = fs::absolute(path).lexically_normal().string();
      if (!seen.insert(canonical).second)
        continue;
      included_header h;
      h.name = rel;
      h.path = canonical;
      h.size = static_cast<long long>(st.st_size);
      h.mtime_ns = mtime_ns(st);
      if (!read_file(canonical, h.content))
        continue;
      found.push_back(std::move(h));
      std::string text_copy = found.back().content;
      scan(text_copy, fs::path(canonical).parent_path().string(),
           fs::path(rel).parent_path().string());
    }
  };
  scan(source, {}, {});
  return found;
}

std::vector<std::string> user_include_dirs(const compile_request &request) {
  std::vector<std::string> dirs = request.include_dirs;
  const auto &o = request.options;
  for (std::size_t i = 0; i < o.size(); ++i) {
    std::string t = trim(o[i]);
    if ((t == "-I" || t == "--include-path") && i + 1 < o.size()) {
      dirs.push_back(trim(o[++i]));
    } else if (starts_with(t, "--include-path=")) {
      dirs.push_back(t.substr(15));
    } else if (starts_with(t, "-I")) {
      dirs.push_back(t.substr(t.size() > 2 && t[2] == '=' ? 3 : 2));
    }
  }
  return dirs;
}

std::vector<std::string> normalized_options(const std::vector<std::string> &options) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string t = trim(options[i]);
    if (t.empty())
      continue;
    auto next = [&]() -> std::string { return i + 1 < options.size() ? trim(options[++i]) : ""; };
    // Include dirs: the headers' content is keyed instead of where they live.
    if (t == "-I" || t == "--include-path") {
      next();
      continue;
    }
    if (starts_with(t, "-I") || starts_with(t, "--include-path="))
      continue;
    // Keeping intermediate files does not change the output.
    if (t == "--keep" || t == "-keep")
      continue;
    if (t == "--keep-dir" || t == "-keep-dir") {
      next();
      continue;
    }
    if (starts_with(t, "--keep-dir="))
      continue;
    // One spelling per macro definition: -DX=1, -D X=1, --define-macro=X=1, --define-macro X=1.
    if (t == "-D" || t == "--define-macro") {
      out.push_back("-D" + next());
      continue;
    }
    if (starts_with(t, "--define-macro=")) {
      out.push_back("-D" + t.substr(15));
      continue;
    }
    if (t == "-U" || t == "--undefine-macro") {
      out.push_back("-U" + next());
      continue;
    }
    if (starts_with(t, "--undefine-macro=")) {
      out.push_back("-U" + t.substr(17));
      continue;
    }
    out.push_back(t);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Requests and keys.

namespace {
void hash_combine(std::size_t &seed, std::size_t v) {
  seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}
std::size_t hash_str(std::string_view s) { return std::hash<std::string_view>{}(s); }
} // namespace

cache_request::cache_request(plugin_ptr<compiler> backend, compile_request request)
    : backend_(std::move(backend)), request_(std::move(request)) {
  if (!backend_)
    throw std::invalid_argument("cache_request needs a compiler");
  backend_id_ = backend_->backend_name() + " " + backend_->version();
  std::size_t h = hash_str(backend_id_);
  hash_combine(h, hash_str(request_.source));
  hash_combine(h, hash_str(request_.source_name));
  hash_combine(h, hash_str(request_.arch));
  hash_combine(h, static_cast<std::size_t>(request_.target));
  hash_combine(h, request_.relocatable ? 1 : 2);
  for (const auto &o : request_.options)
    hash_combine(h, hash_str(o));
  hash_combine(h, 0x51);
  for (const auto &d : request_.include_dirs)
    hash_combine(h, hash_str(d));
  hash_combine(h, 0x52);
  for (const auto &n : request_.name_expressions)
    hash_combine(h, hash_str(n));
  hash_ = h;
}

bool cache_request::same_as(const cache_request &o) const noexcept {
  const auto &a = request_, &b = o.request_;
  return hash_ == o.hash_ && backend_id_ == o.backend_id_ && a.source == b.source &&
         a.source_name == b.source_name && a.arch == b.arch && a.target == b.target &&
         a.relocatable == b.relocatable && a.options == b.options &&
         a.include_dirs == b.include_dirs && a.name_expressions == b.name_expressions;
}

std::string compile_cache_key(const cache_request &request, std::vector<included_header> *headers) {
  const compile_request &r = request.request();
  sha256 h;
  h.field("cuplug compile cache");
  h.field(std::to_string(compile_cache_format_version));
  h.field(request.backend().backend_name());
  h.field(request.backend().version());
  h.field(r.arch);
  h.field(to_string(r.target));
  h.field(r.relocatable ? "relocatable" : "whole-program");
  auto opts = normalized_options(r.options);
  h.field(std::to_string(opts.size()));
  for (const auto &o : opts)
    h.field(o);
  h.field(r.source_name);
  h.field(r.source);
  auto found = find_included_headers(r.source, user_include_dirs(r));
  h.field(std::to_string(found.size()));
  for (const auto &hd : found) {
    h.field(hd.name);
    h.field(hd.content);
  }
  h.field(std::to_string(r.name_expressions.size()));
  for (const auto &n : r.name_expressions)
    h.field(n);
  if (headers)
    *headers = std::move(found);
  return h.hex();
}

const char *to_string(cache_hit hit) noexcept {
  switch (hit) {
  case cache_hit::none:
    return "none";
  case cache_hit::memory:
    return "memory";
  case cache_hit::disk:
    return "disk";
  }
  return "unknown";
}

const char *to_string(disk_cache_status::state s) noexcept {
  switch (s) {
  case disk_cache_status::state::usable:
    return "usable";
  case disk_cache_status::state::disabled:
    return "disabled";
  case disk_cache_status::state::unsafe:
    return "unsafe";
  case disk_cache_status::state::unusable:
    return "unusable";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------------
// Entry encoding: magic "CUPLUGCE", u32 format version, u32 image format, 64-byte hex key,
// u64 payload size, payload (data, log, command, lowered names), 32-byte SHA-256 of all before.

namespace {
constexpr char entry_magic[8] = {'C', 'U', 'P', 'L', 'U', 'G', 'C', 'E'};
constexpr std::size_t entry_header_size = 8 + 4 + 4 + 64 + 8;

void put_u32(std::string &s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string &s, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s.push_back(static_cast<char>(v >> (8 * i)));
}
void put_str(std::string &s, const std::string &v) {
  put_u64(s, v.size());
  s += v;
}

struct reader {
  const std::string &b;
  std::size_t pos;
  std::size_t end;
  bool ok = true;
  std::uint64_t u(int bytes) {
    if (!ok || end - pos < static_cast<std::size_t>(bytes))
      return ok = false, 0;
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= std::uint64_t(static_cast<unsigned char>(b[pos + i])) << (8 * i);
    pos += bytes;
    return v;
  }
  std::string str() {
    std::uint64_t n = u(8);
    if (!ok || end - pos < n)
      return ok = false, std::string();
    std::string s = b.substr(pos, n);
    pos += n;
    return s;
  }
};
} // namespace

std::string encode_cache_entry(const std::string &key, const compiled_image &image) {
  if (key.size() != 64)
    throw std::invalid_argument("cache keys are 64 hex digits");
  std::string payload;
  put_str(payload, image.data);
  put_str(payload, image.log);
  put_str(payload, image.command);
  put_u32(payload, static_cast<std::uint32_t>(image.lowered_names.size()));
  for (const auto &[expr, lowered] : image.lowered_names) {
    put_str(payload, expr);
    put_str(payload, lowered);
  }
  std::string out(entry_magic, sizeof(entry_magic));
  put_u32(out, compile_cache_format_version);
  put_u32(out, static_cast<std::uint32_t>(image.format));
  out += key;
  put_u64(out, payload.size());
  out += payload;
  sha256 h;
  h.update(out);
  auto digest = h.finish();
  out.append(reinterpret_cast<const char *>(digest.data()), digest.size());
  return out;
}

bool decode_cache_entry(const std::string &bytes, const std::string &key, compiled_image &image) {
  if (bytes.size() < entry_header_size + 32)
    return false;
  if (std::memcmp(bytes.data(), entry_magic, sizeof(entry_magic)) != 0)
    return false;
  reader r{bytes, 8, bytes.size() - 32};
  if (r.u(4) != compile_cache_format_version)
    return false;
  std::uint64_t format = r.u(4);
  if (format > static_cast<std::uint64_t>(image_format::ltoir))
    return false;
  if (bytes.compare(r.pos, 64, key) != 0)
    return false;
  r.pos += 64;
  std::uint64_t payload = r.u(8);
  if (!r.ok || payload != r.end - r.pos)
    return false;
  sha256 h;
  h.update(bytes.data(), bytes.size() - 32);
  auto digest = h.finish();
  if (std::memcmp(digest.data(), bytes.data() + bytes.size() - 32, 32) != 0)
    return false;
  compiled_image out;
  out.format = static_cast<image_format>(format);
  out.data = r.str();
  out.log = r.str();
  out.command = r.str();
  std::uint64_t names = r.u(4);
  for (std::uint64_t i = 0; r.ok && i < names; ++i) {
    std::string expr = r.str();
    std::string lowered = r.str();
    out.lowered_names.emplace(std::move(expr), std::move(lowered));
  }
  if (!r.ok || r.pos != r.end || out.data.empty())
    return false;
  image = std::move(out);
  return true;
}

// ---------------------------------------------------------------------------------------------
// The disk store of one root directory.

namespace {

std::string errno_text(int e) { return std::strerror(e); }

std::string mode_text(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Creates `dir` and missing parents with mode 0700.
bool make_dirs(const std::string &dir, std::string &why) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  std::vector<fs::path> missing;
  for (fs::path q = p; !q.empty(); q = q.parent_path()) {
    struct stat st {};
    if (::stat(q.c_str(), &st) == 0)
      break;
    missing.push_back(q);
    if (q == q.root_path())
      break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      why = "cannot create " + it->string() + ": " + errno_text(errno);
      return false;
    }
  }
  return true;
}

// A directory only this user may write to; checked after creation, since another user may have
// made it first.
bool trusted_dir(const std::string &dir, std::string &why, bool &unsafe) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    why = "cannot use " + dir + ": " + errno_text(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    why = dir + " is not a directory";
    return false;
  }
  if (st.st_uid != ::geteuid()) {
    unsafe = true;
    why = dir + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
          std::to_string(::geteuid()) + ")";
    return false;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    unsafe = true;
    why = dir + " is writable by " + ((st.st_mode & S_IWOTH) ? "everyone" : "its group") +
          " (mode " + mode_text(st.st_mode) + ")";
    return false;
  }
  return true;
}

struct disk_store {
  disk_cache_status status;
  std::string entries; // <root>/compiler-v1
  bool warned = false;
  bool write_warned = false;
  std::mutex mutex;
  // Bytes on disk as last counted plus what this process wrote since; rescanned when over cap.
  std::size_t estimated_bytes = 0;
  bool counted = false;

  void check() {
    status.state_ = disk_cache_status::state::usable;
    status.reason.clear();
    std::string why;
    bool unsafe = false;
    entries = (fs::path(status.directory) / compile_cache::entries_subdir).string();
    if (!make_dirs(entries, why)) {
      status.state_ = disk_cache_status::state::unusable;
      status.reason = why;
      return;
    }
    for (const std::string &d : {status.directory, entries}) {
      if (!trusted_dir(d, why, unsafe)) {
        status.state_ =
            unsafe ? disk_cache_status::state::unsafe : disk_cache_status::state::unusable;
        status.reason = why;
        return;
      }
    }
  }

  std::string entry_path(const std::string &key) const { return entries + "/" + key + ".bin"; }

  bool read(const std::string &key, compiled_image &image) {
    int fd = ::open(entry_path(key).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
              !(st.st_mode & (S_IWGRP | S_IWOTH));
    std::string bytes;
    if (ok) {
      bytes.resize(static_cast<std::size_t>(st.st_size));
      std::size_t got = 0;
      while (got < bytes.size()) {
        ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0)
          break;
        got += static_cast<std::size_t>(n);
      }
      ok = got == bytes.size() && decode_cache_entry(bytes, key, image);
    }
    if (ok)
      ::futimens(fd, nullptr); // a hit makes the entry recently used
    ::close(fd);
    return ok;
  }

  // Returns an error text, empty on success.
  std::string write(const std::string &key, const compiled_image &image) {
    static std::atomic<unsigned> counter{0};
    std::string bytes = encode_cache_entry(key, image);
    std::random_device rd;
    std::string tmp = entries + "/.tmp-" + std::to_string(::getpid()) + "-" +
                      std::to_string(counter++) + "-" + std::to_string(rd());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == ENOENT) { // the directory went away under us: make it again
      check();
      if (status.state_ != disk_cache_status::state::usable)
        return status.reason;
      fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
    if (fd < 0)
      return "cannot create " + tmp + ": " + errno_text(errno);
    std::size_t put = 0;
    int err = 0;
    while (put < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + put, bytes.size() - put);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        err = n < 0 ? errno : EIO;
        break;
      }
      put += static_cast<std::size_t>(n);
    }
    // No fsync: a crash may leave a short file under the final name, which the checksum turns
    // into a miss; syncing every entry would cost more than the occasional recompile.
    if (::close(fd) != 0 && err == 0)
      err = errno;
    if (err == 0 && ::rename(tmp.c_str(), entry_path(key).c_str()) != 0)
      err = errno;
    if (err != 0) {
      ::unlink(tmp.c_str());
      return "cannot write " + entry_path(key) + ": " + errno_text(err);
    }
    estimated_bytes += bytes.size();
    return {};
  }

  // Least recently used entries go until the store is under 90% of the cap. Temp files older
  // than an hour are leftovers of killed processes and go too.
  void evict(std::size_t cap, const std::string &keep_key) {
    if (counted && estimated_bytes <= cap)
      return;
    struct file {
      std::string path;
      long long mtime;
      std::size_t size;
    };
    std::vector<file> files;
    std::size_t total = 0;
    auto now = std::chrono::system_clock::now().time_since_epoch();
    long long now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
    std::error_code ec;
    for (fs::directory_iterator it(entries, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        continue;
      if (starts_with(name, ".tmp-")) {
        if (now_ns - mtime_ns(st) > 3600LL * 1000000000LL)
          ::unlink(it->path().c_str());
        continue;
      }
      if (name.size() < 4 || name.compare(name.size() - 4, 4, ".bin") != 0)
        continue;
      total += static_cast<std::size_t>(st.st_size);
      if (name == keep_key + ".bin")
        continue;
      files.push_back({it->path().string(), mtime_ns(st), static_cast<std::size_t>(st.st_size)});
    }
    counted = true;
    estimated_bytes = total;
    if (total <= cap)
      return;
    std::sort(files.begin(), files.end(),
              [](const file &a, const file &b) { return a.mtime < b.mtime; });
    std::size_t target = cap / 10 * 9;
    for (const auto &f : files) {
      if (total <= target)
        break;
      if (::unlink(f.path.c_str()) == 0)
        total -= std::min(total, f.size);
    }
    estimated_bytes = total;
  }
};

bool env_true(const char *name) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return !(s == "0" || s == "false" || s == "no" || s == "off");
}

} // namespace

// ---------------------------------------------------------------------------------------------
// The cache.

struct compile_cache::impl {
  struct header_stamp {
    std::string path;
    long long mtime_ns;
    long long size;
  };
  struct entry {
    cache_request request;
    std::shared_ptr<const cache_result> result;
    std::vector<header_stamp> stamps;
    std::size_t bytes;
  };
  // Most recently used first; the map holds iterators into it.
  std::list<entry> lru;
  std::unordered_multimap<std::size_t, std::list<entry>::iterator> index;
  std::size_t memory_bytes = 0;
  // Generated kernels can be many; the in-process layer keeps at most this much image data.
  static constexpr std::size_t memory_cap = std::size_t(256) << 20;
  mutable std::mutex mutex;

  std::mutex stores_mutex;
  std::unordered_map<std::string, std::unique_ptr<disk_store>> stores;

  disk_store &store(const std::string &directory) {
    std::string root = directory.empty() ? compile_cache::default_directory() : directory;
    std::lock_guard<std::mutex> lock(stores_mutex);
    auto &s = stores[root];
    if (!s) {
      s = std::make_unique<disk_store>();
      s->status.directory = root;
      if (root.empty()) {
        s->status.state_ = disk_cache_status::state::unusable;
        s->status.reason = "no cache directory: set CUPLUG_CACHE_DIR or HOME";
      } else {
        s->check();
      }
    }
    return *s;
  }

  void insert(const cache_request &request, std::shared_ptr<const cache_result> result,
              const std::vector<included_header> &headers) {
    entry e{request, std::move(result), {}, 0};
    for (const auto &h : headers)
      e.stamps.push_back({h.path, h.mtime_ns, h.size});
    e.bytes = e.result->image->data.size() + e.result->image->log.size() +
              request.request().source.size();
    std::lock_guard<std::mutex> lock(mutex);
    auto range = index.equal_range(request.hash());
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second->request.same_as(request)) {
        memory_bytes -= it->second->bytes;
        lru.erase(it->second);
        index.erase(it);
        break;
      }
    }
    memory_bytes += e.bytes;
    lru.push_front(std::move(e));
    index.emplace(request.hash(), lru.begin());
    while (memory_bytes > memory_cap && lru.size() > 1) {
      auto last = std::prev(lru.end());
      auto r = index.equal_range(last->request.hash());
      for (auto it = r.first; it != r.second; ++it)
        if (it->second == last) {
          index.erase(it);
          break;
        }
      memory_bytes -= last->bytes;
      lru.pop_back();
    }
  }
};

compile_cache::compile_cache() : impl_(std::make_unique<impl>()) {}
compile_cache::~compile_cache() = default;

compile_cache &compile_cache::instance() {
  // Never destroyed: entries hold compiler objects whose plugins must outlive them, and
  // libraries are not unloaded at exit.
  static compile_cache *cache = new compile_cache();
  return *cache;
}

bool compile_cache::disabled_by_environment() { return env_true("CUPLUG_DISABLE_CACHE"); }

std::string compile_cache::default_directory() {
  if (const char *d = std::getenv("CUPLUG_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    return (fs::path(x) / "cuplug").string();
  std::string home;
  if (const char *h = std::getenv("HOME"); h && *h) {
    home = h;
  } else if (const passwd *pw = ::getpwuid(::geteuid()); pw && pw->pw_dir) {
    home = pw->pw_dir;
  }
  if (home.empty())
    return {};
  return (fs::path(home) / ".cache" / "cuplug").string();
}

std::size_t compile_cache::max_disk_bytes() {
  constexpr std::size_t fallback = std::size_t(1) << 30;
  const char *v = std::getenv("CUPLUG_CACHE_MAX_SIZE");
  if (v == nullptr || *v == '\0')
    return fallback;
  try {
    std::map<std::string, std::string> values{{"CUPLUG_CACHE_MAX_SIZE", v}};
    return options(values).get_bytes("CUPLUG_CACHE_MAX_SIZE", fallback);
  } catch (const config_error &) {
    throw config_error(std::string("CUPLUG_CACHE_MAX_SIZE='") + v +
                       "' is not a size; use bytes or a unit, e.g. 536870912 or 512MiB");
  }
}

std::shared_ptr<const cache_result> compile_cache::find(const cache_request &request) {
  std::vector<impl::header_stamp> stamps;
  std::shared_ptr<const cache_result> result;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto range = impl_->index.equal_range(request.hash());
    for (auto it = range.first; it != range.second; ++it) {
      if (!it->second->request.same_as(request))
        continue;
      impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second);
      result = it->second->result;
      stamps = it->second->stamps;
      break;
    }
  }
  for (const auto &s : stamps) {
    struct stat st {};
    if (::stat(s.path.c_str(), &st) != 0 || mtime_ns(st) != s.mtime_ns ||
        static_cast<long long>(st.st_size) != s.size)
      return nullptr;
  }
  return result;
}

cache_result compile_cache::compile(const cache_request &request, const cache_policy &policy) {
  const bool off = disabled_by_environment();
  const bool use_memory = policy.memory && !off;
  if (use_memory) {
    if (auto hit = find(request))
      return *hit;
  }
  std::vector<included_header> headers;
  cache_result out;
  out.key = compile_cache_key(request, &headers);

  disk_store *store = nullptr;
  if (policy.disk && !off) {
    disk_store &s = impl_->store(policy.directory);
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.status.state_ == disk_cache_status::state::usable) {
      store = &s;
    } else if (!s.warned) {
      s.warned = true;
      out.warning = "cuplug: not using the compile cache directory: " + s.status.reason +
                    "; compiled kernels are kept in memory only. Set CUPLUG_CACHE_DIR to a "
                    "directory only you can write to.";
    }
  }

  if (store) {
    compiled_image image;
    if (store->read(out.key, image)) {
      out.image = std::make_shared<const compiled_image>(std::move(image));
      out.hit = cache_hit::disk;
    }
  }
  if (!out.image) {
    out.image =
        std::make_shared<const compiled_image>(request.backend().compile(request.request()));
    out.hit = cache_hit::none;
    if (store) {
      std::lock_guard<std::mutex> lock(store->mutex);
      std::string err = store->write(out.key, *out.image);
      if (!err.empty() && !store->write_warned) {
        store->write_warned = true;
        out.warning = "cuplug: could not store a compiled kernel in the cache: " + err;
      }
      if (err.empty())
        store->evict(max_disk_bytes(), out.key);
    }
  }
  if (use_memory) {
    auto stored = std::make_shared<cache_result>(out);
    stored->hit = cache_hit::memory;
    stored->warning.clear();
    impl_->insert(request, std::move(stored), headers);
  }
  return out;
}

disk_cache_status compile_cache::disk_status(const std::string &directory) {
  disk_store &s = impl_->store(directory);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.status;
}

void compile_cache::clear_memory() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->index.clear();
  impl_->lru.clear();
  impl_->memory_bytes = 0;
}

std::size_t compile_cache::memory_entries() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->lru.size();
}

std::size_t compile_cache::clear_disk(const std::string &directory) {
  disk_store &s = impl_->store(directory);
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.status.state_ != disk_cache_status::state::usable)
    return 0;
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(s.entries, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    bool ours = starts_with(name, ".tmp-") ||
                (name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0);
    if (ours && ::unlink(it->path().c_str()) == 0)
      ++removed;
  }
  s.estimated_bytes = 0;
  s.counted = false;
  return removed;
}

} // namespace cuplug
