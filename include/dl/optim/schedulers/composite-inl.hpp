// dl/optim/schedulers/composite-inl.hpp — the bodies of dl/optim/schedulers/composite.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "composite.hpp"

namespace dl::optim::detail {

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
}  // namespace dl::optim::detail

namespace dl::optim {

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

}  // namespace dl::optim
