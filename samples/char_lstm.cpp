// A character-level LSTM language model on the English words Debian ships (package wamerican,
// /usr/share/dict/words): it learns to spell, prints the validation perplexity falling epoch by
// epoch, then invents new words. bench/char_lstm.py is its PyTorch twin (same model, data, loop).
//
//   ./char_lstm [--epochs 4] [--words /usr/share/dict/words] [--limit N] [--seed 0] [--max-perplexity P]
//
// Each word becomes <start> w o r d <end>; the model reads one character at a time and predicts
// the next: Embedding(28, 32) -> LSTM(32, 256, 2 layers, batch_first) -> Linear(256, 28), trained with
// cross entropy (padding ignored) and Adam with gradient clipping. --max-perplexity makes the
// program fail when the last validation perplexity is above P (the test suite's check).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <dl/dl.hpp>
#include <dl/nn.hpp>
#include <dl/nn/rnn.hpp>
#include <dl/optim.hpp>

namespace nn = dl::nn;
namespace F = dl::nn::functional;
using dl::Tensor;

constexpr int64_t kEnd = 0, kStart = 27, kVocab = 28;  // 1..26 are 'a'..'z'

class CharLM : public nn::Module {
 public:
  nn::Embedding<> embed{kVocab, 32};
  nn::LSTM lstm{32, 256, {.num_layers = 2, .batch_first = true}};
  nn::Linear<> head{256, kVocab};

  /// x [B, T] character ids -> logits [B, T, 28].
  Tensor<float> forward(const Tensor<int64_t>& x) {
    auto [out, state] = lstm(embed(x));
    return head(out);
  }
  DL_MODULE(CharLM, embed, lstm, head)
};

/// The words made only of letters, lowercased, without duplicates, in a seeded random order.
std::vector<std::string> read_words(const std::string& path, unsigned seed) {
  std::ifstream in(path);
  if (!in) throw dl::Error("cannot read " + path + " (Debian: apt install wamerican)");
  std::vector<std::string> words;
  for (std::string w; std::getline(in, w);) {
    bool letters = !w.empty();
    for (char& c : w) {
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      letters = letters && c >= 'a' && c <= 'z';
    }
    if (letters) words.push_back(w);
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  std::shuffle(words.begin(), words.end(), std::mt19937(seed));
  return words;
}

/// A batch: inputs <start> w o r d, targets w o r d <end>, padded with -100 (ignored by the loss).
std::pair<Tensor<int64_t>, Tensor<int64_t>> make_batch(const std::vector<std::string>& words, size_t begin, size_t end) {
  size_t T = 0;
  for (size_t i = begin; i < end; ++i) T = std::max(T, words[i].size() + 1);
  const auto B = int64_t(end - begin);
  Tensor<int64_t> x = dl::full({B, int64_t(T)}, kEnd), y = dl::full({B, int64_t(T)}, int64_t(-100));
  for (int64_t b = 0; b < B; ++b) {
    const std::string& w = words[begin + size_t(b)];
    int64_t* xr = x.data() + b * int64_t(T);
    int64_t* yr = y.data() + b * int64_t(T);
    xr[0] = kStart;
    for (size_t t = 0; t < w.size(); ++t) xr[t + 1] = yr[t] = w[t] - 'a' + 1;
    yr[w.size()] = kEnd;
  }
  return {x, y};
}

/// Loss summed over the characters of words[begin, end) and their count.
std::pair<double, int64_t> evaluate(CharLM& model, const std::vector<std::string>& words, size_t begin, size_t end) {
  dl::NoGradGuard no_grad;
  double total = 0;
  int64_t chars = 0;
  for (size_t i = begin; i < end; i += 256) {
    auto [x, y] = make_batch(words, i, std::min(end, i + 256));
    Tensor<float> logits = model(x);
    total += F::cross_entropy(logits.reshape({-1, kVocab}), y.reshape({-1}), {.reduction = nn::Reduction::sum}).item();
    for (int64_t k = 0; k < y.numel(); ++k) chars += y.data()[k] != -100;
  }
  return {total, chars};
}

/// Samples a new word one character at a time (temperature < 1: more conservative).
std::string generate(CharLM& model, std::mt19937& rng, double temperature = 0.8) {
  dl::NoGradGuard no_grad;
  std::string word;
  Tensor<int64_t> x = dl::full({1, 1}, kStart);
  std::optional<std::tuple<Tensor<float>, Tensor<float>>> state;
  while (word.size() < 24) {
    auto [out, st] = model.lstm(model.embed(x), state);
    state = st;
    Tensor<float> p = F::softmax(model.head(out).reshape({kVocab}) * float(1 / temperature), 0);
    std::discrete_distribution<int64_t> pick(p.data(), p.data() + kVocab);
    int64_t c = pick(rng);
    if (c == kStart) continue;
    if (c == kEnd) break;
    word += char('a' + c - 1);
    x = dl::full({1, 1}, c);
  }
  return word;
}

int main(int argc, char** argv) try {
  int epochs = 4;
  size_t limit = 0;
  unsigned seed = 0;
  double max_perplexity = 0;
  std::string path = "/usr/share/dict/words";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    const char* usage = "usage: %s [--epochs N] [--words FILE] [--limit N] [--seed S] [--max-perplexity P]\n";
    if (a == "--help" || a == "-h") return std::printf(usage, argv[0]), 0;
    if (!v) return std::fprintf(stderr, usage, argv[0]), 2;
    if (a == "--epochs") epochs = std::atoi(v);
    else if (a == "--words") path = v;
    else if (a == "--limit") limit = size_t(std::atol(v));
    else if (a == "--seed") seed = unsigned(std::atoi(v));
    else if (a == "--max-perplexity") max_perplexity = std::atof(v);
    else return std::fprintf(stderr, "unknown option %s\n", a.c_str()), 2;
    ++i;
  }
  dl::manual_seed(seed);
  std::vector<std::string> words = read_words(path, seed);
  if (limit && limit < words.size()) words.resize(limit);
  const size_t n_val = words.size() / 20, n_train = words.size() - n_val;  // 5% for validation
  std::printf("%zu words: %zu for training, %zu for validation\n", words.size(), n_train, n_val);

  CharLM model;
  dl::optim::Adam opt(model.parameters(), {.lr = 2e-3});
  std::mt19937 rng(seed);
  const size_t batch = 64;
  auto [v0, c0] = evaluate(model, words, n_train, words.size());
  std::printf("before training: validation perplexity %.2f (28 symbols: a model that knows nothing scores 28)\n", std::exp(v0 / c0));
  double perplexity = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::shuffle(words.begin(), words.begin() + long(n_train), rng);
    model.train();
    const auto t0 = std::chrono::steady_clock::now();
    double train_loss = 0;
    size_t steps = 0;
    for (size_t i = 0; i + batch <= n_train; i += batch, ++steps) {
      auto [x, y] = make_batch(words, i, i + batch);
      Tensor<float> loss = F::cross_entropy(model(x).reshape({-1, kVocab}), y.reshape({-1}));
      opt.zero_grad();
      loss.backward();
      nn::utils::clip_grad_norm_(model.parameters(), 1.0);
      opt.step();
      train_loss += loss.item();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    model.eval();
    auto [v, c] = evaluate(model, words, n_train, words.size());
    perplexity = std::exp(v / c);
    std::printf("epoch %d/%d  train loss %.4f  validation perplexity %.2f  (%.1f s, %.0f words/s)\n", epoch, epochs, train_loss / steps,
                perplexity, secs, double(steps * batch) / secs);
    std::fflush(stdout);
  }
  std::printf("new words:");
  for (int i = 0; i < 12; ++i) std::printf(" %s", generate(model, rng).c_str());
  std::printf("\n");
  if (max_perplexity > 0 && !(perplexity <= max_perplexity)) {
    std::printf("validation perplexity %.2f is above %.2f\n", perplexity, max_perplexity);
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
