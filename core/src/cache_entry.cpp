// The compile cache's entry file format: the encoder and its verifying decoder.
#include "cache_entry.hpp"

#include "sha256.hpp"

#include <cuplug/compile_cache.hpp>

#include <cstring>
#include <stdexcept>
#include <utility>

// Layout: magic "CUPLUGCE", u32 format version, u32 image format, 64-byte hex request key, u64
// payload size, payload, 32-byte SHA-256 of all before. Payload: image key (64 bytes), data, log,
// command, u32 count + lowered names (expression, name), u32 count + variables (name, value),
// u32 count + files (path, sha256, i64 size, mtime_ns, ctime_ns, u64 ino, dev), u32 count + absent
// paths. Integers are little-endian; strings are a u64 length and the bytes.

namespace cuplug {
namespace {
constexpr char entry_magic[8] = {'C', 'U', 'P', 'L', 'U', 'G', 'C', 'E'};

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

std::uint64_t get_u(const char *p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// Reads within [pos, end); the first short read turns `ok` off and every later read returns empty.
struct reader {
  const std::string &b;
  std::size_t pos;
  std::size_t end;
  bool ok = true;
  std::uint64_t u(int bytes) {
    if (!ok || end - pos < static_cast<std::size_t>(bytes))
      return ok = false, 0;
    std::uint64_t v = get_u(b.data() + pos, bytes);
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
  std::string fixed(std::size_t n) {
    if (!ok || end - pos < n)
      return ok = false, std::string();
    std::string s = b.substr(pos, n);
    pos += n;
    return s;
  }
  // A count of items each at least `min_item` bytes long: one that cannot fit is a lie.
  std::uint64_t count(std::size_t min_item) {
    std::uint64_t n = u(4);
    if (ok && n > (end - pos) / min_item)
      ok = false;
    return ok ? n : 0;
  }
};

bool is_hex_key(const std::string &s) {
  if (s.size() != 64)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

} // namespace

std::string encode_entry(const std::string &key, const cache_entry &entry) {
  if (key.size() != 64 || entry.image_key.size() != 64)
    throw std::invalid_argument("cache keys are 64 hex digits");
  const compiled_image &image = entry.image;
  std::string payload = entry.image_key;
  put_str(payload, image.data);
  put_str(payload, image.log);
  put_str(payload, image.command);
  put_u32(payload, static_cast<std::uint32_t>(image.lowered_names.size()));
  for (const auto &[expr, lowered] : image.lowered_names) {
    put_str(payload, expr);
    put_str(payload, lowered);
  }
  const recorded_inputs &in = entry.inputs;
  put_u32(payload, static_cast<std::uint32_t>(in.environment.size()));
  for (const auto &[name, value] : in.environment) {
    put_str(payload, name);
    put_str(payload, value);
  }
  put_u32(payload, static_cast<std::uint32_t>(in.files.size()));
  for (const auto &f : in.files) {
    put_str(payload, f.path);
    put_str(payload, f.sha256);
    put_u64(payload, static_cast<std::uint64_t>(f.size));
    put_u64(payload, static_cast<std::uint64_t>(f.mtime_ns));
    put_u64(payload, static_cast<std::uint64_t>(f.ctime_ns));
    put_u64(payload, f.ino);
    put_u64(payload, f.dev);
  }
  put_u32(payload, static_cast<std::uint32_t>(in.absent.size()));
  for (const auto &a : in.absent)
    put_str(payload, a);

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

bool entry_header_matches(const char *head, std::uint64_t file_size, const std::string &key) {
  if (file_size < entry_header_size + entry_trailer_size)
    return false;
  if (std::memcmp(head, entry_magic, sizeof(entry_magic)) != 0)
    return false;
  if (get_u(head + 8, 4) != compile_cache_format_version)
    return false;
  if (get_u(head + 12, 4) > static_cast<std::uint64_t>(image_format::ltoir))
    return false;
  if (key.size() != 64 || std::memcmp(head + 16, key.data(), 64) != 0)
    return false;
  return get_u(head + 80, 8) == file_size - entry_header_size - entry_trailer_size;
}

bool decode_entry(const std::string &bytes, const std::string &key, cache_entry &entry) {
  if (!entry_header_matches(bytes.data(), bytes.size(), key))
    return false;
  sha256 h;
  h.update(bytes.data(), bytes.size() - entry_trailer_size);
  auto digest = h.finish();
  if (std::memcmp(digest.data(), bytes.data() + bytes.size() - entry_trailer_size,
                  entry_trailer_size) != 0)
    return false;

  reader r{bytes, entry_header_size, bytes.size() - entry_trailer_size};
  cache_entry out;
  out.image.format = static_cast<image_format>(get_u(bytes.data() + 12, 4));
  out.image_key = r.fixed(64);
  out.image.data = r.str();
  out.image.log = r.str();
  out.image.command = r.str();
  for (std::uint64_t i = 0, n = r.count(16); r.ok && i < n; ++i) {
    std::string expr = r.str();
    std::string lowered = r.str();
    out.image.lowered_names.emplace(std::move(expr), std::move(lowered));
  }
  for (std::uint64_t i = 0, n = r.count(16); r.ok && i < n; ++i) {
    std::string name = r.str();
    std::string value = r.str();
    out.inputs.environment.emplace_back(std::move(name), std::move(value));
  }
  for (std::uint64_t i = 0, n = r.count(16 + 40); r.ok && i < n; ++i) {
    file_record f;
    f.path = r.str();
    f.sha256 = r.str();
    f.size = static_cast<long long>(r.u(8));
    f.mtime_ns = static_cast<long long>(r.u(8));
    f.ctime_ns = static_cast<long long>(r.u(8));
    f.ino = r.u(8);
    f.dev = r.u(8);
    out.inputs.files.push_back(std::move(f));
  }
  for (std::uint64_t i = 0, n = r.count(8); r.ok && i < n; ++i)
    out.inputs.absent.push_back(r.str());
  if (!r.ok || r.pos != r.end || out.image.data.empty() || !is_hex_key(out.image_key))
    return false;
  out.image.inputs = as_compile_inputs(out.inputs);
  entry = std::move(out);
  return true;
}

// The public test door: an entry with no recorded inputs, keyed by `key` alone.
std::string encode_cache_entry(const std::string &key, const compiled_image &image) {
  cache_entry e;
  e.image = image;
  e.image_key = key;
  return encode_entry(key, e);
}

bool decode_cache_entry(const std::string &bytes, const std::string &key, compiled_image &image) {
  cache_entry e;
  if (!decode_entry(bytes, key, e))
    return false;
  image = std::move(e.image);
  return true;
}

} // namespace cuplug
