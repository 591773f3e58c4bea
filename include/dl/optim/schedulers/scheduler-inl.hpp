// dl/optim/schedulers/scheduler-inl.hpp — the bodies of dl/optim/schedulers/scheduler.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "scheduler.hpp"

namespace dl::optim::detail {

DL_API std::string sched_float(double v) { return dl::detail::py_float(v); }

DL_API int64_t py_mod(int64_t a, int64_t b, const char* who) {
  DL_CHECK(b != 0, who, ": integer division or modulo by zero");
  const int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
DL_API int64_t py_floordiv(int64_t a, int64_t b, const char* who) {
  DL_CHECK(b != 0, who, ": integer division or modulo by zero");
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
DL_API double py_fmod(double a, double b, const char* who) {
  DL_CHECK(b != 0, who, ": float modulo by zero");
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
DL_API double py_div(double a, double b, const char* who) {
  DL_CHECK(b != 0, who, ": float division by zero");
  return a / b;
}
DL_API size_t bisect_right(const std::vector<int64_t>& a, int64_t x) {
  size_t lo = 0, hi = a.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (x < a[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

DL_API std::vector<double> sched_values(const AnyTensor& t, const std::string& key) {
  std::vector<double> out;
  if (t.is<double>()) {
    const Tensor<double> c = t.contiguous().as<double>();
    out.assign(c.data(), c.data() + c.numel());
  } else if (t.is<float>()) {
    const Tensor<float> c = t.contiguous().as<float>();
    out.assign(c.data(), c.data() + c.numel());
  } else if (t.is<int64_t>()) {
    const Tensor<int64_t> c = t.contiguous().as<int64_t>();
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(double(c.data()[i]));
  } else {
    throw Error(dl::detail::cat("scheduler state dict: ", key, " is ", dtype_name(t.dtype()),
                                ", expected float64, float32 or int64"));
  }
  return out;
}

DL_API void SchedulerFields::visit(LRScheduler& s, const std::string& prefix) {
  const std::string outer = prefix_;
  prefix_ = outer + prefix;
  name("scheduler", s.name());
  s.visit_state(*this);
  prefix_ = outer;
}
}  // namespace dl::optim::detail

namespace dl::optim {

DL_API std::vector<double> GroupValues::for_groups(const std::string& name, size_t n) const {
  if (!per_group) {
    DL_CHECK(!values.empty(), name, " is required (one value, or one per parameter group)");
    return std::vector<double>(n, values[0]);
  }
  DL_CHECK(values.size() == n, name, " must have the same length as optimizer.param_groups. ", name, " has ", values.size(),
           " values, param_groups has ", n, ".");
  return values;
}

DL_API std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs(num_groups());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = optimizer_->get_lr(g);
  return lrs;
}

DL_API void LRScheduler::init(int64_t last_epoch) {
  const size_t n = num_groups();
  if (last_epoch == -1) {
    for (size_t g = 0; g < n; ++g)
      if (!optimizer_->initial_lr(g)) optimizer_->set_initial_lr(g, optimizer_->get_lr(g));
  } else {
    for (size_t g = 0; g < n; ++g)
      DL_CHECK(optimizer_->initial_lr(g), "param 'initial_lr' is not specified in param_groups[", g,
               "] when resuming scheduler with last_epoch >= 0 (", name(), " with last_epoch = ", last_epoch,
               "): load the optimizer's state dict, which has it, or set it with set_initial_lr");
  }
  base_lrs_.resize(n);
  for (size_t g = 0; g < n; ++g) base_lrs_[g] = *optimizer_->initial_lr(g);
  last_epoch_ = last_epoch;
  initial_step();
}

DL_API void LRScheduler::initial_step() {
  step_count_ = 0;
  struct InitialMode {
    bool& flag;
    explicit InitialMode(bool& f) : flag(f) { flag = true; }
    ~InitialMode() { flag = false; }
  } mode(is_initial_);
  step();
}

DL_API void LRScheduler::step() {
  ++step_count_;
  update_lr(std::nullopt);
}

DL_API void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<double> lrs;
  if (!epoch) {
    ++last_epoch_;
    lrs = get_lr();
  } else {
    last_epoch_ = *epoch;
    auto closed = closed_form_lr();
    lrs = closed ? std::move(*closed) : get_lr();
  }
  DL_CHECK(lrs.size() == num_groups(), name(), ".get_lr() returned ", lrs.size(), " learning rates for ", num_groups(),
           " parameter groups");
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_->set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

DL_API void LRScheduler::visit_state(detail::SchedulerFields& f) {
  f.field("base_lrs", base_lrs_);
  f.field("last_epoch", last_epoch_);
  f.field("_step_count", step_count_);
  f.field("_last_lr", last_lr_);
}

DL_API StateDict LRScheduler::state_dict() const {
  StateDict sd;
  detail::SchedulerSaver saver(sd);
  // The saver only reads the fields; visit_state is one non-const list for both directions.
  saver.visit(const_cast<LRScheduler&>(*this), "");
  return sd;
}

DL_API void LRScheduler::load_state_dict(const StateDict& sd) {
  detail::SchedulerLoader check(sd, false);
  check.visit(*this, "");
  detail::SchedulerLoader load(sd, true);
  load.visit(*this, "");
  // Nested schedulers first, as PyTorch loads them after their parent's own numbers.
  std::vector<LRScheduler*> pending{this};
  while (!pending.empty()) {
    LRScheduler* s = pending.back();
    pending.pop_back();
    s->after_load();
    for (LRScheduler* c : s->sub_schedulers()) pending.push_back(c);
  }
}

}  // namespace dl::optim
