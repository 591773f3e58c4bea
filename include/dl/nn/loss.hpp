// dl/nn/loss.hpp — loss modules: CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss,
// HuberLoss, BCELoss, BCEWithLogitsLoss, KLDivLoss; each holds its options and calls its
// functional form (dl/nn/functional/loss.hpp).
//   nn::CrossEntropyLoss criterion({.label_smoothing = 0.1});   auto loss = criterion(logits, target);
#pragma once

#include "container.hpp"
#include "functional/loss.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

namespace detail {
/// A loss module: options (with class weights as a buffer, so state_dict holds them, as PyTorch's).
template <class Options>
class LossBase : public Module {
 public:
  Options options;

 protected:
  explicit LossBase(Options o) : options(std::move(o)) {}
};
}  // namespace detail

/// Cross entropy of logits [N, C] (or [C], or [N, C, d1..dk]) with class indices or probabilities.
class CrossEntropyLoss : public detail::LossBase<CrossEntropyOptions<float>> {
 public:
  explicit CrossEntropyLoss(CrossEntropyOptions<float> o = {}) : LossBase(std::move(o)) {}
  template <expression E>
  Tensor<float> forward(const E& input, const Tensor<int64_t>& target) { return functional::cross_entropy(input, target, options); }
  template <expression E>
  Tensor<float> forward(const E& input, const Tensor<float>& target) { return functional::cross_entropy(input, target, options); }
  DL_MODULE(CrossEntropyLoss)
  void visit_declared_buffers_(detail::MemberVisitor& v) override {
    static const std::vector<std::string> names{"weight"};
    detail::visit_buffers(v, names, options.weight);
  }
};

/// Negative log likelihood of log-probabilities [N, C] (or [C], [N, C, d1..dk]) with class indices.
class NLLLoss : public detail::LossBase<NLLLossOptions<float>> {
 public:
  explicit NLLLoss(NLLLossOptions<float> o = {}) : LossBase(std::move(o)) {}
  template <expression E>
  Tensor<float> forward(const E& input, const Tensor<int64_t>& target) { return functional::nll_loss(input, target, options); }
  DL_MODULE(NLLLoss)
  void visit_declared_buffers_(detail::MemberVisitor& v) override {
    static const std::vector<std::string> names{"weight"};
    detail::visit_buffers(v, names, options.weight);
  }
};

#define DL_LOSS(Name, OptionsT, fn)                                                                        \
  class Name : public detail::LossBase<OptionsT> {                                                         \
   public:                                                                                                 \
    explicit Name(OptionsT o = {}) : LossBase(std::move(o)) {}                                             \
    template <expression A, expression B>                                                                  \
    Tensor<float> forward(const A& input, const B& target) { return functional::fn(input, target, options); } \
    DL_MODULE(Name)                                                                                        \
  };
/// Mean squared error.
DL_LOSS(MSELoss, LossOptions, mse_loss)
/// Mean absolute error.
DL_LOSS(L1Loss, LossOptions, l1_loss)
/// Squared error below beta, absolute error above.
DL_LOSS(SmoothL1Loss, SmoothL1LossOptions, smooth_l1_loss)
/// Squared error below delta, delta-scaled absolute error above.
DL_LOSS(HuberLoss, HuberLossOptions, huber_loss)
/// Kullback-Leibler divergence of log-probabilities (input) and probabilities (target).
DL_LOSS(KLDivLoss, KLDivLossOptions, kl_div)
#undef DL_LOSS

/// Binary cross entropy of probabilities.
class BCELoss : public detail::LossBase<BCELossOptions<float>> {
 public:
  explicit BCELoss(BCELossOptions<float> o = {}) : LossBase(std::move(o)) {}
  template <expression A, expression B>
  Tensor<float> forward(const A& input, const B& target) { return functional::binary_cross_entropy(input, target, options); }
  DL_MODULE(BCELoss)
  void visit_declared_buffers_(detail::MemberVisitor& v) override {
    static const std::vector<std::string> names{"weight"};
    detail::visit_buffers(v, names, options.weight);
  }
};

/// Binary cross entropy of logits (the stable sigmoid + BCE), with pos_weight.
class BCEWithLogitsLoss : public detail::LossBase<BCEWithLogitsLossOptions<float>> {
 public:
  explicit BCEWithLogitsLoss(BCEWithLogitsLossOptions<float> o = {}) : LossBase(std::move(o)) {}
  template <expression A, expression B>
  Tensor<float> forward(const A& input, const B& target) {
    return functional::binary_cross_entropy_with_logits(input, target, options);
  }
  DL_MODULE(BCEWithLogitsLoss)
  void visit_declared_buffers_(detail::MemberVisitor& v) override {
    static const std::vector<std::string> names{"weight", "pos_weight"};
    detail::visit_buffers(v, names, options.weight, options.pos_weight);
  }
};

}  // namespace dl::nn
