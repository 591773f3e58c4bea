// A libtorch program with a sequence model: a token classifier with an Embedding (padding_idx), a
// two-layer batch-first LSTM, a bidirectional GRU, LayerNorm and the functional API with its option
// classes; Adam with two parameter groups whose learning rates are changed through
// param_groups() (the static_cast idiom and set_lr) and by a user-written LRScheduler; the
// CrossEntropyLoss module with label smoothing; a custom Dataset mapped with Stack and loaded through
// a DistributedRandomSampler (replica 0 of 2). Then the other layers and functions a libtorch user
// reaches for (padding, 1-d and adaptive pooling, GroupNorm, activations, attention, a transformer
// encoder layer, the loss modules), each printed as a sum. Written for libtorch and compiled
// unchanged against dl (see mnist.cpp). Deterministic: weights and data from formulas, no dropout.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace F = torch::nn::functional;

constexpr int64_t kVocab = 12, kLength = 6, kExamples = 96;

// Token sequences from a formula; the label is the sum of the tokens modulo 3. Token 0 pads the
// end of the shorter sequences.
struct TokenDataset : torch::data::datasets::Dataset<TokenDataset> {
  torch::data::Example<> get(size_t index) override {
    std::vector<float> tokens(kLength, 0.0f);
    const int64_t length = 3 + int64_t(index % 4);
    int64_t sum = 0;
    for (int64_t t = 0; t < length; ++t) {
      const int64_t token = 1 + int64_t((index * 7 + size_t(t) * 5 + index / 3) % (kVocab - 1));
      tokens[t] = float(token);
      sum += token;
    }
    return {torch::tensor(tokens), torch::tensor(int64_t(sum % 3))};
  }
  torch::optional<size_t> size() const override { return kExamples; }
};

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : embedding(torch::nn::EmbeddingOptions(kVocab, 8).padding_idx(0)),
        lstm(torch::nn::LSTMOptions(8, 12).num_layers(2).batch_first(true)),
        gru(torch::nn::GRUOptions(8, 6).bidirectional(true)),
        norm(torch::nn::LayerNormOptions({24})),
        head(24, 3) {
    register_module("embedding", embedding);
    register_module("lstm", lstm);
    register_module("gru", gru);
    register_module("norm", norm);
    register_module("head", head);
  }

  torch::Tensor forward(torch::Tensor tokens) {
    auto x = embedding->forward(tokens.to(torch::kLong));  // [B, T, 8]
    auto lstm_out = std::get<0>(lstm->forward(x));        // [B, T, 12]
    auto gru_out = std::get<0>(gru->forward(x.transpose(0, 1)));  // [T, B, 12] (time first)
    auto features = torch::cat({lstm_out.select(1, kLength - 1), gru_out.mean(0)}, 1);
    features = F::gelu(norm->forward(features), F::GELUFuncOptions().approximate("tanh"));
    return head->forward(F::dropout(features, F::DropoutFuncOptions().p(0.0).training(is_training())));
  }

  torch::nn::Embedding embedding{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::GRU gru{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Classifier);

// Every parameter from a formula, so that both libraries start from the same weights.
void init_weights(torch::nn::Module& module, double scale) {
  torch::NoGradGuard no_grad;
  int64_t i = 0;
  for (auto& p : module.named_parameters()) {
    auto values = torch::sin(torch::arange(p.value().numel(), torch::kFloat) * 0.61 + double(i++)) * scale;
    p.value().copy_(values.view_as(p.value()));
  }
}

// Halves every group's learning rate every second step (a user's scheduler, as libtorch's StepLR is written).
struct HalvingScheduler : torch::optim::LRScheduler {
  explicit HalvingScheduler(torch::optim::Optimizer& optimizer) : torch::optim::LRScheduler(optimizer) {}
  std::vector<double> get_lrs() override {
    auto lrs = get_current_lrs();
    if (step_count_ % 2 == 1)
      for (auto& lr : lrs) lr *= 0.5;
    return lrs;
  }
};

void print_sum(const char* name, const torch::Tensor& t) { std::printf("%s %.5f\n", name, t.sum().item<float>()); }

int main() {
  Classifier model;
  init_weights(*model, 0.3);

  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<torch::Tensor> recurrent, rest;
  for (auto& p : model->named_parameters())
    (p.key().rfind("lstm", 0) == 0 || p.key().rfind("gru", 0) == 0 ? recurrent : rest).push_back(p.value());
  groups.emplace_back(recurrent, std::make_unique<torch::optim::AdamOptions>(0.02));
  groups.emplace_back(rest);
  torch::optim::Adam optimizer(groups, torch::optim::AdamOptions(0.01).weight_decay(1e-4));
  HalvingScheduler scheduler(optimizer);
  torch::nn::CrossEntropyLoss criterion(torch::nn::CrossEntropyLossOptions().label_smoothing(0.05));

  auto sampler = torch::data::samplers::DistributedRandomSampler(kExamples, /*num_replicas=*/2, /*rank=*/0);
  for (size_t epoch = 0; epoch < 4; ++epoch) {
    sampler.set_epoch(epoch);
    auto loader = torch::data::make_data_loader(TokenDataset().map(torch::data::transforms::Stack<>()), sampler,
                                                torch::data::DataLoaderOptions().batch_size(16));
    model->train();
    double total = 0;
    int batches = 0;
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = criterion(model->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
      total += loss.item<double>();
      ++batches;
    }
    scheduler.step();
    if (epoch == 1) {  // the classic idiom, then the generic one
      for (auto& group : optimizer.param_groups())
        static_cast<torch::optim::AdamOptions&>(group.options()).lr(group.options().get_lr() * 0.8);
      optimizer.param_groups()[1].options().set_lr(0.004);
    }
    std::printf("epoch %zu batches %d loss %.5f lr %.5f %.5f\n", epoch, batches, total / batches,
                optimizer.param_groups()[0].options().get_lr(), optimizer.param_groups()[1].options().get_lr());
  }

  model->eval();
  {
    torch::NoGradGuard no_grad;
    auto all = TokenDataset().map(torch::data::transforms::Stack<>()).get_batch(std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7});
    auto logits = model->forward(all.data);
    auto summed = F::cross_entropy(logits, all.target, F::CrossEntropyFuncOptions().reduction(torch::kSum));
    auto correct = (logits.argmax(1) == all.target).sum().item<int64_t>();
    std::printf("eval loss %.5f correct %lld/8\n", summed.item<float>(), static_cast<long long>(correct));
  }

  // The other layers and functions, on inputs from formulas.
  auto seq = torch::sin(torch::arange(2 * 4 * 10, torch::kFloat) * 0.3).view({2, 4, 10});  // [N, C, L]
  auto img = torch::cos(torch::arange(2 * 4 * 6 * 6, torch::kFloat) * 0.17).view({2, 4, 6, 6});
  print_sum("pad_reflect", F::pad(seq, F::PadFuncOptions({2, 1}).mode(torch::kReflect)));
  print_sum("pad_constant", F::pad(img, F::PadFuncOptions({1, 1, 2, 0}).value(0.5)));
  print_sum("max_pool1d", F::max_pool1d(seq, F::MaxPool1dFuncOptions(3).stride(2)));
  print_sum("avg_pool1d", F::avg_pool1d(seq, F::AvgPool1dFuncOptions(2)));
  print_sum("adaptive_avg_pool2d", F::adaptive_avg_pool2d(img, F::AdaptiveAvgPool2dFuncOptions({2, 3})));
  print_sum("adaptive_max_pool1d", F::adaptive_max_pool1d(seq, F::AdaptiveMaxPool1dFuncOptions(4)));
  print_sum("normalize", F::normalize(seq, F::NormalizeFuncOptions().p(1).dim(2)).abs());
  print_sum("layer_norm", F::layer_norm(seq, F::LayerNormFuncOptions({10}).eps(1e-3)).pow(2));
  print_sum("group_norm", F::group_norm(img, F::GroupNormFuncOptions(2)).pow(2));
  print_sum("softplus", F::softplus(seq, F::SoftplusFuncOptions().beta(2).threshold(1)));
  print_sum("elu", F::elu(seq, F::ELUFuncOptions().alpha(0.5)));
  print_sum("hardtanh", F::hardtanh(seq, F::HardtanhFuncOptions().min_val(-0.5).max_val(0.25)));
  print_sum("leaky_relu", F::leaky_relu(seq, F::LeakyReLUFuncOptions().negative_slope(0.2)));
  print_sum("silu_mish", F::silu(seq) + F::mish(seq));
  print_sum("log_softmax", F::log_softmax(seq, F::LogSoftmaxFuncOptions(1)));
  auto weight = torch::sin(torch::arange(3 * 4 * 3, torch::kFloat)).view({3, 4, 3});
  print_sum("conv1d", F::conv1d(seq, weight, F::Conv1dFuncOptions().stride(2).padding(1)));

  torch::nn::Sequential stack(torch::nn::ZeroPad2d(1), torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 6, 3).bias(false)),
                              torch::nn::GroupNorm(3, 6), torch::nn::SiLU(), torch::nn::AdaptiveAvgPool2d(2),
                              torch::nn::Flatten(), torch::nn::Unflatten(1, std::vector<int64_t>{6, 4}));
  init_weights(*stack, 0.2);
  auto stacked = stack->forward(img);
  std::printf("sequential %lld %lld %lld ", static_cast<long long>(stacked.size(0)), static_cast<long long>(stacked.size(1)),
              static_cast<long long>(stacked.size(2)));
  print_sum("sum", stacked);

  torch::nn::MultiheadAttention attention(torch::nn::MultiheadAttentionOptions(10, 2));
  init_weights(*attention, 0.2);
  auto tokens = seq.permute({1, 0, 2});  // [L=4, B=2, E=10]
  auto attended = attention->forward(tokens, tokens, tokens);
  print_sum("attention", std::get<0>(attended));
  print_sum("attention_weights", std::get<1>(attended).pow(2));
  torch::nn::TransformerEncoderLayer encoder(torch::nn::TransformerEncoderLayerOptions(10, 2).dim_feedforward(16).dropout(0.0));
  init_weights(*encoder, 0.2);
  print_sum("encoder_layer", encoder->forward(tokens).pow(2));

  auto a = torch::sigmoid(seq), b = torch::sigmoid(seq * 2 - 0.5);
  print_sum("mse_sum", torch::nn::MSELoss(torch::kSum)(a, b));
  print_sum("l1", torch::nn::L1Loss()(a, b));
  print_sum("smooth_l1", torch::nn::SmoothL1Loss(torch::nn::SmoothL1LossOptions().beta(0.1))(a, b));
  print_sum("huber", torch::nn::HuberLoss(torch::nn::HuberLossOptions().delta(0.2))(a, b));
  print_sum("bce", torch::nn::BCELoss()(a, b));
  print_sum("bce_logits", torch::nn::BCEWithLogitsLoss(torch::nn::BCEWithLogitsLossOptions().reduction(torch::kSum))(seq, b));
  print_sum("kl_div", torch::nn::KLDivLoss(torch::nn::KLDivLossOptions(torch::kBatchMean))(F::log_softmax(seq, 1), F::softmax(seq * 2, 1)));
  print_sum("embedding_from_pretrained",
            torch::nn::Embedding::from_pretrained(weight.view({12, 3}))->forward(torch::tensor({int64_t(0), int64_t(5), int64_t(11)})));
  return 0;
}
