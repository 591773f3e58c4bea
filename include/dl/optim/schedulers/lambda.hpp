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
}  // namespace detail


}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "lambda-inl.hpp"
#endif
