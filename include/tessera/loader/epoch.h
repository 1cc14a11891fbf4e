// File: include/tessera/loader/epoch.h
//
// EpochPlan: which items (node or edge ids, dataset rows) make up each batch
// of an epoch on one trainer.
//
// Every trainer runs the same number of batches per epoch (`num_batches`,
// agreed on through Coordinator::BarrierMax), so synchronous training cannot
// deadlock when the work split is uneven (DGL #3538). A trainer with fewer
// items fills the batches past its own data with its items again, from the
// start of the epoch's order (as torch's DistributedSampler pads); a trainer
// without items gets empty batches. Batches never repeat an item.
//
// With shuffle, each epoch's order is a permutation drawn from (seed, epoch);
// batch b of epoch e always holds the same items, whoever computes it.
#ifndef TESSERA_INCLUDE_TESSERA_LOADER_EPOCH_H_
#define TESSERA_INCLUDE_TESSERA_LOADER_EPOCH_H_

#include <cstdint>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::loader {

struct BatchOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;  // Only full batches (every trainer's last short batch dropped).
  uint64_t seed = 0;
};

class EpochPlan {
 public:
  // Batches a trainer with `num_items` items runs on its own.
  static int64_t OwnBatches(int64_t num_items, const BatchOptions& options);

  // `num_batches`: the batches per epoch (the largest OwnBatches over all
  // trainers); must be >= OwnBatches(items.size()).
  static StatusOr<EpochPlan> Create(std::vector<int64_t> items, const BatchOptions& options,
                                    int64_t num_batches);

  int64_t num_batches() const { return num_batches_; }
  int64_t num_items() const { return static_cast<int64_t>(items_.size()); }
  const BatchOptions& options() const { return options_; }

  // The items in epoch `epoch`'s order.
  std::vector<int64_t> Order(int64_t epoch) const;
  // Batch b of an epoch, from that epoch's order.
  std::vector<int64_t> Batch(const std::vector<int64_t>& order, int64_t b) const;
  // The random seed of batch b of an epoch (for its sampling).
  uint64_t BatchSeed(int64_t epoch, int64_t b) const;

 private:
  EpochPlan(std::vector<int64_t> items, BatchOptions options, int64_t num_batches)
      : items_(std::move(items)), options_(options), num_batches_(num_batches) {}
  std::vector<int64_t> items_;
  BatchOptions options_;
  int64_t num_batches_;
};

}  // namespace tessera::loader

#endif  // TESSERA_INCLUDE_TESSERA_LOADER_EPOCH_H_
