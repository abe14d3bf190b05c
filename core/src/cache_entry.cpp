// The compile cache's entry file format: encode_cache_entry() and its verifying decoder.
#include "cache_entry.hpp"
#include "sha256.hpp"

#include <cuplug/compile_cache.hpp>

#include <cstring>
#include <stdexcept>
#include <utility>

// Layout: magic "CUPLUGCE", u32 format version, u32 image format, 64-byte hex key, u64 payload
// size, payload (data, log, command, lowered names), 32-byte SHA-256 of all before. Integers are
// little-endian; strings are a u64 length and the bytes.

namespace cuplug {
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

} // namespace cuplug
