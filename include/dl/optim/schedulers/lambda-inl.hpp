// dl/optim/schedulers/lambda-inl.hpp — the bodies of dl/optim/schedulers/lambda.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "lambda.hpp"

namespace dl::optim::detail {

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
}  // namespace dl::optim::detail

namespace dl::optim {

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

}  // namespace dl::optim
