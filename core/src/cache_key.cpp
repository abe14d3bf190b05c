// Cache keys: normalised options, the per-process request hash, the SHA-256 request key.
#include "cache_key.hpp"
#include "compile_cache_detail.hpp"
#include "sha256.hpp"

#include <cuplug/compile_cache.hpp>

#include <functional>
#include <stdexcept>
#include <utility>

namespace cuplug {
using detail::starts_with;
using detail::trim;

std::vector<std::string> normalized_options(const std::vector<std::string> &options) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string t = trim(options[i]);
    if (t.empty())
      continue;
    auto next = [&]() -> std::string { return i + 1 < options.size() ? trim(options[++i]) : ""; };
    // Include dirs decide which files are read: one spelling each.
    if (t == "-I" || t == "--include-path") {
      out.push_back("-I" + next());
      continue;
    }
    if (starts_with(t, "--include-path=")) {
      out.push_back("-I" + t.substr(15));
      continue;
    }
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
  hash_combine(h, hash_str(request_.code));
  hash_combine(h, hash_str(request_.program));
  hash_combine(h, static_cast<std::size_t>(request_.target));
  hash_combine(h, (request_.relocatable ? 1 : 2) + (request_.debug ? 4 : 8) +
                      (request_.keep_files ? 16 : 32));
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
         a.source_name == b.source_name && a.arch == b.arch && a.code == b.code &&
         a.program == b.program && a.target == b.target && a.relocatable == b.relocatable &&
         a.debug == b.debug && a.keep_files == b.keep_files &&
         a.keep_directory == b.keep_directory && a.options == b.options &&
         a.include_dirs == b.include_dirs && a.name_expressions == b.name_expressions;
}

std::string compile_cache_key(const cache_request &request) {
  const compile_request &r = request.request();
  sha256 h;
  h.field("cuplug compile cache");
  h.field(std::to_string(compile_cache_format_version));
  h.field(request.backend().backend_name());
  h.field(request.backend().version());
  h.field(r.arch);
  h.field(r.code);
  h.field(to_string(r.target));
  h.field(r.relocatable ? "relocatable" : "whole-program");
  h.field(r.debug ? "debug" : "release");
  h.field(r.program);
  auto opts = normalized_options(r.options);
  h.field(std::to_string(opts.size()));
  for (const auto &o : opts)
    h.field(o);
  h.field(std::to_string(r.include_dirs.size()));
  for (const auto &d : r.include_dirs)
    h.field(d);
  h.field(r.source_name);
  h.field(r.source);
  h.field(std::to_string(r.name_expressions.size()));
  for (const auto &n : r.name_expressions)
    h.field(n);
  return h.hex();
}

} // namespace cuplug
