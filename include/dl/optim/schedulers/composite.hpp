// dl/optim/schedulers/composite.hpp — schedulers made of schedulers: SequentialLR (one after another, at
// milestones) and ChainedScheduler (all at once, their changes multiplied).
//   optim::SequentialLR sched(opt, {&warmup, &cosine}, {5});
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../optimizer.hpp"
#include "plateau.hpp"  // ReduceLROnPlateau, which neither composite accepts
#include "scheduler.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// SequentialLR: runs schedulers[0] until milestones[0], then schedulers[1] (started afresh at
/// epoch 0), ...; every scheduler must drive `optimizer`. The schedulers are not owned.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
               int64_t last_epoch = -1);
  std::string name() const override { return "SequentialLR"; }
  DL_API void step() override;
  /// Throws: SequentialLR delegates to its schedulers (PyTorch raises NotImplementedError).
  DL_API std::vector<double> get_lr() override;

 protected:
  std::vector<LRScheduler*> sub_schedulers() const override { return schedulers_; }
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
};

/// ChainedScheduler: step() steps every scheduler in order, so their changes multiply. The
/// schedulers are not owned; optimizer defaults to the first scheduler's.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<LRScheduler*> schedulers, Optimizer* optimizer = nullptr);
  std::string name() const override { return "ChainedScheduler"; }
  DL_API void step() override;
  /// The last scheduler's (PyTorch's ChainedScheduler has no last_epoch of its own).
  int64_t last_epoch() const override { return schedulers_.back()->last_epoch(); }
  /// Throws: ChainedScheduler delegates to its schedulers (PyTorch raises NotImplementedError).
  DL_API std::vector<double> get_lr() override;

 protected:
  std::vector<LRScheduler*> sub_schedulers() const override { return schedulers_; }
  DL_API void visit_state(detail::SchedulerFields& f) override;

 private:
  std::vector<LRScheduler*> schedulers_;
};

// ------------------------------------------------------------------------------ implementation

namespace detail {
DL_API void check_schedulers(const char* who, const std::vector<LRScheduler*>& schedulers, const Optimizer& optimizer);
/// ChainedScheduler's optimizer: the given one, else the first scheduler's.
DL_API Optimizer& chained_optimizer(const std::vector<LRScheduler*>& schedulers, Optimizer* optimizer);
}  // namespace detail

}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "composite-inl.hpp"
#endif
