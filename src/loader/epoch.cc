// File: src/loader/epoch.cc
#include "tessera/loader/epoch.h"

#include "fmt/format.h"
#include "src/base/random.h"
#include "src/loader/minibatch.h"

namespace tessera::loader {

int64_t EpochPlan::OwnBatches(int64_t num_items, const BatchOptions& options) {
  int64_t bs = std::max<int64_t>(1, options.batch_size);
  return options.drop_last ? num_items / bs : (num_items + bs - 1) / bs;
}

StatusOr<EpochPlan> EpochPlan::Create(std::vector<int64_t> items, const BatchOptions& options,
                                      int64_t num_batches) {
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        fmt::format("batch_size must be at least 1, got {}", options.batch_size));
  }
  int64_t own = OwnBatches(static_cast<int64_t>(items.size()), options);
  if (num_batches < own) {
    return absl::InvalidArgumentError(
        fmt::format("{} batches per epoch cannot cover {} items in batches of {}", num_batches,
                    items.size(), options.batch_size));
  }
  return EpochPlan(std::move(items), options, num_batches);
}

std::vector<int64_t> EpochPlan::Order(int64_t epoch) const {
  std::vector<int64_t> order = items_;
  if (!options_.shuffle) return order;
  Rng rng(options_.seed, /*stream=*/11, static_cast<uint64_t>(epoch));
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.Below(i)]);
  }
  return order;
}

std::vector<int64_t> EpochPlan::Batch(const std::vector<int64_t>& order, int64_t b) const {
  int64_t n = static_cast<int64_t>(order.size()), bs = options_.batch_size;
  int64_t begin = b * bs;
  if (n == 0) return {};
  if (begin + bs <= n || (begin < n && !options_.drop_last)) {
    return {order.begin() + begin, order.begin() + std::min(n, begin + bs)};
  }
  // Past this trainer's own items (or a short batch under drop_last): wrap
  // around, at most n distinct items.
  int64_t size = std::min(bs, n);
  std::vector<int64_t> batch(size);
  for (int64_t j = 0; j < size; ++j) batch[j] = order[(begin + j) % n];
  return batch;
}

uint64_t EpochPlan::BatchSeed(int64_t epoch, int64_t b) const {
  return DeriveSeed(DeriveSeed(options_.seed, static_cast<uint64_t>(epoch)),
                    static_cast<uint64_t>(b));
}

}  // namespace tessera::loader
