// The "logging" allocator: an adaptor that writes every event to a replayable log.
#include <cuplug/allocator.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/pool/make_upstream.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

namespace cuplug::plugins {
namespace {

// The log format, version 1 (cuplug.memory.replay() reads it). Text, one event per line, fields
// separated by one space; lines starting with '#' are comments:
//   seq time_ns thread event ptr bytes stream
// seq counts from 1 in file order, which is the order the events happened in; time_ns is since
// the adaptor was made; thread is a small number per thread; ptr and stream are hex. Events:
//   allocate         ptr = the new block, bytes = requested size
//   allocate_failed  ptr = 0x0, bytes = requested size (the error went on to the caller)
//   deallocate       ptr, bytes and stream as given (logged before the upstream frees, so a
//                    later allocation reusing the address is logged after it)
//   free_held        bytes = bytes released;   trim  bytes = the keep_bytes asked for
constexpr const char *log_header = "# cuplug allocator log v1: seq time_ns thread event ptr bytes "
                                   "stream\n";

unsigned thread_number() {
  static std::atomic<unsigned> next{1};
  thread_local const unsigned mine = next.fetch_add(1);
  return mine;
}

std::string required_path(const options &opts) {
  if (!opts.contains("path"))
    throw config_error("allocator 'logging': option 'path' is required (the log file to write, "
                       "or '-' for stderr)");
  return opts.get_string("path", "");
}

// Options: `upstream` (default "device"), `path` (required; truncated on creation; '-' is
// stderr), `flush` (bool, default true: flush each line, so the log survives a crash).
class logging_allocator final : public allocator {
public:
  explicit logging_allocator(const options &opts)
      : path_(required_path(opts)), flush_(opts.get_bool("flush", true)),
        upstream_(pool::make_upstream(opts, "logging")) {
    if (path_ == "-") {
      file_ = stderr;
    } else {
      file_ = std::fopen(path_.c_str(), "w");
      if (file_ == nullptr)
        throw config_error("allocator 'logging': cannot open the log '" + path_ +
                           "' for writing: " + std::strerror(errno));
    }
    std::fputs(log_header, file_);
    std::fflush(file_);
  }
  ~logging_allocator() override {
    if (file_ != stderr)
      std::fclose(file_);
  }

protected:
  std::size_t do_bytes_held() const override { return upstream_->stats().bytes_held; }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    device_ptr p = 0;
    try {
      p = upstream_->allocate(bytes, stream);
    } catch (...) {
      log("allocate_failed", 0, bytes, stream);
      throw;
    }
    log("allocate", p, bytes, stream);
    return p;
  }

  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    log("deallocate", ptr, bytes, stream);
    upstream_->deallocate(ptr, bytes, stream);
  }

  memory_kind do_kind() const override { return upstream_->kind(); }
  bool do_can_free_held() const override { return upstream_->can_free_held(); }
  std::size_t do_free_held() override {
    const std::size_t released = upstream_->free_held();
    log("free_held", 0, released, nullptr);
    return released;
  }
  std::size_t do_trim(std::size_t keep_bytes) override {
    log("trim", 0, keep_bytes, nullptr);
    return upstream_->trim(keep_bytes);
  }

  void log(const char *event, device_ptr ptr, std::size_t bytes, CUstream stream) noexcept {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start_)
                        .count();
    const unsigned thread = thread_number();
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(file_, "%" PRIu64 " %lld %u %s 0x%llx %zu 0x%" PRIxPTR "\n", ++seq_,
                 static_cast<long long>(ns), thread, event, static_cast<unsigned long long>(ptr),
                 bytes, reinterpret_cast<std::uintptr_t>(stream));
    if (flush_)
      std::fflush(file_);
  }

  const std::string path_;
  const bool flush_;
  plugin_ptr<allocator> upstream_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::FILE *file_ = nullptr;
  std::uint64_t seq_ = 0;
};

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::logging_allocator, "logging",
              "adaptor writing a replayable event log (options: upstream, path, flush)", "1.0")
