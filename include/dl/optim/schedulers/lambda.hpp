// dl/optim/schedulers/lambda.hpp — schedulers driven by a function of the epoch: LambdaLR (lr =
// initial_lr * f(epoch)) and MultiplicativeLR (lr *= f(epoch)).
//   optim::LambdaLR sched(opt, {.lr_lambda = [](int64_t epoch) { return std::pow(0.95, epoch); }});
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../optimizer.hpp"
#include "scheduler.hpp"

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// A function of the epoch that gives a learning-rate factor (LambdaLR, MultiplicativeLR).
using LRLambda = std::function<double(int64_t)>;

/// One LRLambda for every group, or a list with one per group: `.lr_lambda = [](int64_t e) {
/// return std::pow(0.95, e); }` or `.lr_lambda = {f0, f1}`.
struct LRLambdas {
  std::vector<LRLambda> fns;
  bool per_group = false;
  LRLambdas() = default;
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, LRLambdas> && std::is_invocable_r_v<double, F&, int64_t>)
  LRLambdas(F&& f) : fns{LRLambda(std::forward<F>(f))} {}
  LRLambdas(std::initializer_list<LRLambda> f) : fns(f), per_group(true) {}
  LRLambdas(std::vector<LRLambda> f) : fns(std::move(f)), per_group(true) {}
};

/// LambdaLR: lr = initial_lr * lr_lambda(epoch).
struct LambdaLROptions {
  LRLambdas lr_lambda;
  int64_t last_epoch = -1;
};
class LambdaLR : public LRScheduler {
 public:
  using Options = LambdaLROptions;
  LambdaLR(Optimizer& optimizer, const LambdaLROptions& options);
  std::string name() const override { return "LambdaLR"; }
  DL_API std::vector<double> get_lr() override;

 private:
  std::vector<LRLambda> lambdas_;
};

/// MultiplicativeLR: lr *= lr_lambda(epoch) at every step.
struct MultiplicativeLROptions {
  LRLambdas lr_lambda;
  int64_t last_epoch = -1;
};
class MultiplicativeLR : public LRScheduler {
 public:
  using Options = MultiplicativeLROptions;
  MultiplicativeLR(Optimizer& optimizer, const MultiplicativeLROptions& options);
  std::string name() const override { return "MultiplicativeLR"; }
  DL_API std::vector<double> get_lr() override;

 private:
  std::vector<LRLambda> lambdas_;
};

// ------------------------------------------------------------------------------ implementation

namespace detail {
DL_API std::vector<LRLambda> lr_lambdas(const LRLambdas& l, size_t n, const char* who);
#if DL_HEADER_ONLY
DL_API std::vector<LRLambda> lr_lambdas(const LRLambdas& l, size_t n, const char* who) {
  std::vector<LRLambda> fns;
  if (!l.per_group) {
    DL_CHECK(l.fns.size() == 1, who, ": lr_lambda is required (a function, or one per parameter group)");
    fns.assign(n, l.fns[0]);
  } else {
    DL_CHECK(l.fns.size() == n, "Expected ", n, " lr_lambdas, but got ", l.fns.size());
    fns = l.fns;
  }
  for (size_t i = 0; i < fns.size(); ++i)
    DL_CHECK(bool(fns[i]), "lr_lambda should be a function, but got an empty std::function (", who, ", group ", i, ")");
  return fns;
}
#endif  // DL_HEADER_ONLY
}  // namespace detail


#if DL_HEADER_ONLY
DL_API LambdaLR::LambdaLR(Optimizer& optimizer, const LambdaLROptions& o)
    : LRScheduler(optimizer), lambdas_(detail::lr_lambdas(o.lr_lambda, optimizer.num_param_groups(), "LambdaLR")) {
  init(o.last_epoch);
}

DL_API std::vector<double> LambdaLR::get_lr() {
  DL_CHECK(lambdas_.size() == base_lrs_.size(), "LambdaLR: ", lambdas_.size(), " lr_lambdas for ", base_lrs_.size(), " base_lrs");
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = base_lrs_[g] * lambdas_[g](last_epoch_);
  return lrs;
}

DL_API MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, const MultiplicativeLROptions& o)
    : LRScheduler(optimizer),
      lambdas_(detail::lr_lambdas(o.lr_lambda, optimizer.num_param_groups(), "MultiplicativeLR")) {
  init(o.last_epoch);
}

DL_API std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (is_initial_) return lrs;
  DL_CHECK(lambdas_.size() == lrs.size(), "MultiplicativeLR: ", lambdas_.size(), " lr_lambdas for ", lrs.size(),
           " parameter groups");
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] *= lambdas_[g](last_epoch_);
  return lrs;
}
#endif  // DL_HEADER_ONLY

}  // namespace dl::optim
