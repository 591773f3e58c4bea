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
#if DL_HEADER_ONLY
DL_API void check_schedulers(const char* who, const std::vector<LRScheduler*>& schedulers, const Optimizer& optimizer) {
  for (size_t i = 0; i < schedulers.size(); ++i) {
    const LRScheduler* s = schedulers[i];
    DL_CHECK(s, who, " at index ", i, " should have `optimizer` as its attribute (got a null scheduler).");
    DL_CHECK(!dynamic_cast<const ReduceLROnPlateau*>(s), who,
             " does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be specified when calling "
             "`step`, but got one at index ",
             i, " in the given schedulers sequence.");
    DL_CHECK(&s->optimizer() == &optimizer, who,
             " expects all schedulers to belong to the same optimizer, but got scheduler ", s->name(), " at index ", i,
             " has ", s->optimizer().name(), " at ", static_cast<const void*>(&s->optimizer()), ", which is different from ",
             optimizer.name(), " at ", static_cast<const void*>(&optimizer), ".");
  }
}
DL_API Optimizer& chained_optimizer(const std::vector<LRScheduler*>& schedulers, Optimizer* optimizer) {
  DL_CHECK(!schedulers.empty(), "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.");
  if (optimizer) return *optimizer;
  DL_CHECK(schedulers[0], "ChainedScheduler at index 0 should have `optimizer` as its attribute (got a null scheduler).");
  return schedulers[0]->optimizer();
}
#endif  // DL_HEADER_ONLY
}  // namespace detail

#if DL_HEADER_ONLY
DL_API SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
                                  int64_t last_epoch)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  DL_CHECK(!schedulers_.empty(), "SequentialLR expects at least one scheduler, but got no scheduler.");
  detail::check_schedulers("SequentialLR", schedulers_, optimizer);
  DL_CHECK(milestones_.size() == schedulers_.size() - 1,
           "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, "
           "but got number of schedulers ",
           schedulers_.size(), " and the number of milestones to be equal to ", milestones_.size());
  last_epoch_ = last_epoch + 1;
  // Back to the initial rates, and undo the initial step every scheduler made when it was built.
  for (size_t g = 0; g < num_groups(); ++g) {
    auto lr0 = optimizer.initial_lr(g);
    DL_CHECK(lr0, "SequentialLR: param_groups[", g, "] has no 'initial_lr'");
    optimizer.set_lr(g, *lr0);
  }
  std::vector<LRScheduler*> pending = schedulers_;
  while (!pending.empty()) {
    LRScheduler* s = pending.back();
    pending.pop_back();
    const std::vector<LRScheduler*> subs = s->sub_schedulers();
    if (subs.empty()) --s->last_epoch_;
    else pending.insert(pending.end(), subs.begin(), subs.end());
  }
  // Only the scheduler meant to run at epoch 0 makes its initial step.
  LRScheduler* first = schedulers_[detail::bisect_right(milestones_, 0)];
  first->initial_step();
  last_lr_ = first->get_last_lr();
}

DL_API void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = detail::bisect_right(milestones_, last_epoch_);
  LRScheduler* s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s->update_lr(0);
  else s->step();
  last_lr_ = s->get_last_lr();
}

DL_API std::vector<double> SequentialLR::get_lr() {
  throw Error("SequentialLR has no get_lr of its own: it steps its schedulers (use get_last_lr for the current rates)");
}

DL_API void SequentialLR::visit_state(detail::SchedulerFields& f) {
  f.field("last_epoch", last_epoch_);
  f.field("_milestones", milestones_);
  f.field("_last_lr", last_lr_);
  for (size_t i = 0; i < schedulers_.size(); ++i) f.visit(*schedulers_[i], "_schedulers." + std::to_string(i) + ".");
}

DL_API ChainedScheduler::ChainedScheduler(std::vector<LRScheduler*> schedulers, Optimizer* optimizer)
    : LRScheduler(detail::chained_optimizer(schedulers, optimizer)), schedulers_(std::move(schedulers)) {
  detail::check_schedulers("ChainedScheduler", schedulers_, *optimizer_);
  last_lr_ = schedulers_.back()->group_lrs();
}

DL_API void ChainedScheduler::step() {
  for (LRScheduler* s : schedulers_) s->step();
  last_lr_ = schedulers_.back()->group_lrs();
}

DL_API std::vector<double> ChainedScheduler::get_lr() {
  throw Error("ChainedScheduler has no get_lr of its own: it steps its schedulers (use get_last_lr for the current rates)");
}

DL_API void ChainedScheduler::visit_state(detail::SchedulerFields& f) {
  f.field("_last_lr", last_lr_);
  for (size_t i = 0; i < schedulers_.size(); ++i) f.visit(*schedulers_[i], "_schedulers." + std::to_string(i) + ".");
}
#endif  // DL_HEADER_ONLY

}  // namespace dl::optim
