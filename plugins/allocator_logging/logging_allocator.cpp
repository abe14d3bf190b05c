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
  return opts.get_output_path("path", "");
}

// Without `flush`, lines are written in batches of this many (and at destruction or exit).
constexpr std::uint64_t batch_lines = 256;

class logging_allocator;

// Every live logging allocator. Backends usually live to the end of the process without being
// destroyed, so at exit each one writes what it still batches (flush=false) and reports what
// it lost. Never destroyed itself: an allocator may outlive the exit handlers.
struct live_logs {
  std::mutex mutex;
  logging_allocator *first = nullptr;
  void finish_all();
};
live_logs &live() {
  static live_logs *const logs = new live_logs;
  return *logs;
}
struct finish_at_exit {
  ~finish_at_exit() { live().finish_all(); }
} const at_exit;

// Options: `upstream` (default "device"), `path` (required; truncated on creation; '-' is
// stderr), `flush` (bool, default true: write each line at once, so the log survives a crash).
//
// A log that cannot be written (a full disk) never fails an allocation, and never loses events
// silently: the first failure prints a warning naming the file and the error, every event that
// could not be written is counted, the log gets a comment line saying which events are missing
// where they are missing (once writing works again), and destruction prints the total.
//
// Lines go out with fwrite on an unbuffered stream, whose return value is exactly what reached
// the file: stdio's own buffer can be dropped after a short write with fflush still reporting
// success, which is how a full disk once kept 183 of 4001 lines without a word.
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
      std::setvbuf(file_, nullptr, _IONBF, 0);
    }
    const std::size_t header = std::strlen(log_header);
    if (std::fwrite(log_header, 1, header, file_) != header) {
      const int error = errno;
      if (file_ != stderr)
        std::fclose(file_);
      throw config_error("allocator 'logging': cannot write the log '" + path_ +
                         "': " + std::strerror(error));
    }
    pending_.reserve(flush_ ? 256 : batch_lines * 160);
    std::lock_guard<std::mutex> lock(live().mutex);
    next_live_ = live().first;
    if (next_live_ != nullptr)
      next_live_->previous_live_ = this;
    live().first = this;
  }

  ~logging_allocator() override {
    {
      std::lock_guard<std::mutex> lock(live().mutex);
      (previous_live_ != nullptr ? previous_live_->next_live_ : live().first) = next_live_;
      if (next_live_ != nullptr)
        next_live_->previous_live_ = previous_live_;
    }
    finish();
    if (file_ != stderr && std::fclose(file_) != 0 && lost_ == 0)
      std::fprintf(stderr, "cuplug WARNING: allocator 'logging': closing the log '%s' failed: %s\n",
                   path_.c_str(), std::strerror(errno));
  }

  // Writes what is batched, marks what is missing, and reports the total lost: at destruction
  // or at exit. Later events are still logged.
  void finish() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    if (missing_ != 0 && !gap_queued_)
      queue_gap_mark();
    write_pending();
    if (lost_ != 0 && lost_ != lost_reported_)
      std::fprintf(stderr,
                   "cuplug WARNING: allocator 'logging': %" PRIu64 " of %" PRIu64
                   " events could not be written to the log '%s'; it cannot be replayed "
                   "faithfully\n",
                   lost_, seq_, path_.c_str());
    lost_reported_ = lost_;
  }

protected:
  std::size_t do_bytes_held() const override { return upstream_->stats().bytes_held; }

private:
  friend struct live_logs;

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
    char line[160];
    std::lock_guard<std::mutex> lock(mutex_);
    const int n = std::snprintf(
        line, sizeof line, "%" PRIu64 " %lld %u %s 0x%llx %zu 0x%" PRIxPTR "\n", ++seq_,
        static_cast<long long>(ns), thread, event, static_cast<unsigned long long>(ptr), bytes,
        reinterpret_cast<std::uintptr_t>(stream));
    try {
      if (missing_ != 0 && !gap_queued_)
        queue_gap_mark();
      pending_.append(line, static_cast<std::size_t>(n));
    } catch (...) { // no memory for the line: it is lost like one the disk refused
      return lost(ENOMEM, pending_lines_ + 1, true);
    }
    ++pending_lines_;
    if (flush_ || pending_lines_ >= batch_lines)
      write_pending();
  }

  // A comment saying which events are missing, written before the next line. It starts with a
  // newline: the failure may have cut a line short. Needs mutex_.
  void queue_gap_mark() {
    char mark[160];
    const int n = std::snprintf(mark, sizeof mark,
                                "\n# %" PRIu64 " events missing here (%" PRIu64 " to %" PRIu64
                                "): writing them failed: %s\n",
                                missing_, first_missing_, first_missing_ + missing_ - 1,
                                std::strerror(missing_error_));
    pending_.append(mark, static_cast<std::size_t>(n));
    gap_queued_ = true;
    gap_end_ = pending_.size();
  }

  // Writes the batched text; the events whose lines did not reach the file whole are lost.
  // Needs mutex_.
  void write_pending() noexcept {
    if (pending_.empty())
      return;
    const std::size_t written = std::fwrite(pending_.data(), 1, pending_.size(), file_);
    const int error = errno;
    if (gap_queued_ && written >= gap_end_)
      missing_ = 0;          // the mark is in the file
    std::uint64_t whole = 0; // event lines written in full
    for (std::size_t start = 0, end; start < written; start = end + 1) {
      end = pending_.find('\n', start);
      if (end == std::string::npos || end >= written)
        break;
      whole += pending_[start] >= '0' && pending_[start] <= '9';
    }
    const std::uint64_t failed = pending_lines_ - whole;
    pending_.clear();
    pending_lines_ = 0;
    gap_queued_ = false;
    if (failed != 0)
      lost(error, failed, false);
    std::clearerr(file_);
  }

  // The last `count` events (up to seq_) did not reach the file, errno `error`. Needs mutex_.
  void lost(int error, std::uint64_t count, bool drop_pending) noexcept {
    if (drop_pending) {
      pending_.clear();
      pending_lines_ = 0;
      gap_queued_ = false;
    }
    if (lost_ == 0)
      std::fprintf(stderr,
                   "cuplug WARNING: allocator 'logging': writing event %" PRIu64
                   " to the log '%s' failed: %s; events that cannot be written are counted, and "
                   "the log marks where they are missing\n",
                   seq_ - count + 1, path_.c_str(), std::strerror(error));
    lost_ += count;
    if (missing_ == 0)
      first_missing_ = seq_ - count + 1;
    missing_ += count;
    missing_error_ = error;
  }

  const std::string path_;
  const bool flush_;
  plugin_ptr<allocator> upstream_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::FILE *file_ = nullptr;
  std::uint64_t seq_ = 0;
  std::string pending_;             // lines (and a gap mark) not yet written
  std::uint64_t pending_lines_ = 0; // event lines in pending_
  std::uint64_t lost_ = 0;          // events that could not be written, in all
  std::uint64_t lost_reported_ = 0; // lost_ when finish() last reported it
  std::uint64_t missing_ = 0;       // of those, the ones no mark in the file mentions yet
  std::uint64_t first_missing_ = 0; // the first of them
  int missing_error_ = 0;
  bool gap_queued_ = false; // pending_ holds their mark, ending at gap_end_
  std::size_t gap_end_ = 0;
  logging_allocator *previous_live_ = nullptr, *next_live_ = nullptr; // in live()
};

void live_logs::finish_all() {
  std::lock_guard<std::mutex> lock(mutex);
  for (logging_allocator *log = first; log != nullptr; log = log->next_live_)
    log->finish();
}

} // namespace
} // namespace cuplug::plugins

CUPLUG_PLUGIN(allocator, cuplug::plugins::logging_allocator, "logging",
              "adaptor writing a replayable event log (options: upstream, path, flush)",
              CUPLUG_PLUGIN_VERSION)
