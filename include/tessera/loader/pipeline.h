// File: include/tessera/loader/pipeline.h
//
// Pipeline<T>: produces items 0 .. count-1 with `num_workers` threads into a
// bounded window of `depth` items and hands them out in index order (so the
// order of batches never depends on thread timing). With 0 workers each item
// is produced by the caller of Next(). A producer's error (a Status, or an
// exception it threw) is returned by Next() for that item. Next() waits at
// most `timeout` for an item. Destroying the pipeline stops the workers
// (each finishes the item it is on; producers have their own deadlines).
#ifndef TESSERA_INCLUDE_TESSERA_LOADER_PIPELINE_H_
#define TESSERA_INCLUDE_TESSERA_LOADER_PIPELINE_H_

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "tessera/base/interrupt.h"
#include "tessera/base/status.h"

namespace tessera::loader {

template <typename T>
class Pipeline {
 public:
  using Produce = std::function<StatusOr<T>(int64_t index)>;

  Pipeline(int64_t count, Produce produce, int num_workers, int depth,
           std::chrono::milliseconds timeout)
      : count_(count), produce_(std::move(produce)), depth_(std::max(1, depth)), timeout_(timeout) {
    try {
      for (int w = 0; w < num_workers; ++w) workers_.emplace_back([this] { Work(); });
    } catch (...) {  // std::system_error: no thread could be started.
      Stop();        // The started ones, or their destructors would terminate.
      throw;
    }
  }
  ~Pipeline() { Stop(); }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  int64_t count() const { return count_; }

  // The next item; nullopt after the last one.
  StatusOr<std::optional<T>> Next() {
    if (workers_.empty()) {
      if (next_deliver_ >= count_) return std::optional<T>();
      Result item = Call(next_deliver_);
      // An interrupted batch is produced again by the next call.
      if (absl::IsCancelled(item.status)) return item.status;
      ++next_deliver_;
      if (!item.status.ok()) return item.status;
      return std::move(item.value);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (next_deliver_ >= count_) return std::optional<T>();
    int64_t index = next_deliver_;
    // Waits in slices so that an interrupt (Ctrl-C in a host program) ends
    // the wait promptly; the batch stays queued for a later Next(). A timeout
    // <= 0 waits without limit.
    const auto give_up = timeout_.count() > 0 ? std::chrono::steady_clock::now() + timeout_
                                              : std::chrono::steady_clock::time_point::max();
    bool ready = ready_.count(index) > 0;
    while (!ready && std::chrono::steady_clock::now() < give_up) {
      auto slice = std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(100), give_up - std::chrono::steady_clock::now());
      ready = changed_.wait_for(lock, slice, [&] { return ready_.count(index) > 0; });
      if (!ready) {
        lock.unlock();
        Status interrupted = CheckInterrupt();
        lock.lock();
        if (!interrupted.ok()) return interrupted;
      }
    }
    if (!ready) {
      return absl::DeadlineExceededError(
          fmt::format("batch {} was not ready after {} s (sampler threads stuck?)", index,
                      timeout_.count() / 1000.0));
    }
    Result item = std::move(ready_.at(index));
    ready_.erase(index);
    ++next_deliver_;
    lock.unlock();
    changed_.notify_all();  // A window slot is free.
    if (!item.status.ok()) return item.status;
    return std::move(item.value);
  }

 private:
  struct Result {
    Status status;
    std::optional<T> value;
  };

  Result Call(int64_t index) {
    Result result;
    try {
      StatusOr<T> item = produce_(index);
      if (item.ok()) {
        result.value.emplace(std::move(*item));
      } else {
        result.status = item.status();
      }
    } catch (abi::__forced_unwind&) {
      throw;  // Thread cancellation (e.g. pthread_exit) must unwind.
    } catch (const std::bad_alloc&) {
      result.status = absl::ResourceExhaustedError(fmt::format(
          "batch {}: out of memory (std::bad_alloc): the batch needs more memory than this "
          "process can get",
          index));
    } catch (const std::exception& e) {
      result.status = absl::InternalError(fmt::format("batch {}: {}", index, e.what()));
    } catch (...) {
      result.status = absl::InternalError(fmt::format("batch {}: unknown exception", index));
    }
    return result;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }
  void Work() {
    while (true) {
      int64_t index;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          return stop_ || next_claim_ >= count_ || next_claim_ < next_deliver_ + depth_;
        });
        if (stop_ || next_claim_ >= count_) return;
        index = next_claim_++;
      }
      Result item = Call(index);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.emplace(index, std::move(item));
      }
      changed_.notify_all();
    }
  }

  const int64_t count_;
  const Produce produce_;
  const int64_t depth_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  int64_t next_claim_ = 0;
  int64_t next_deliver_ = 0;
  std::map<int64_t, Result> ready_;
  std::vector<std::thread> workers_;
};

}  // namespace tessera::loader

#endif  // TESSERA_INCLUDE_TESSERA_LOADER_PIPELINE_H_
