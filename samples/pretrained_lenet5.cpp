// Runs a LeNet-5 trained in PyTorch: loads the weights that samples/train_lenet5_pytorch.py saved
// with torch.save (.pth) or as .safetensors into dl::models::lenet5() — no conversion step — and
// evaluates them on the Fashion-MNIST test set.
//   /usr/bin/python3 samples/train_lenet5_pytorch.py          # writes lenet5_fashion.pth
//   pretrained_lenet5 lenet5_fashion.pth [data dir]           # the same accuracy as PyTorch printed
#include <cstdio>
#include <string>

#include <dl/dl.hpp>
#include <dl/models.hpp>

int main(int argc, char** argv) {
  const bool help = argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h");
  if (argc < 2 || help) {
    std::fprintf(help ? stdout : stderr, "usage: pretrained_lenet5 WEIGHTS.pth|WEIGHTS.safetensors [data dir]\n");
    return help ? 0 : 2;
  }
  const std::string root = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist";
  try {
    auto net = dl::models::lenet5();
    net.load_state_dict(dl::load(argv[1]));  // strict: every name and shape must match
    net.eval();
    auto test = dl::data::FashionMNIST(root, /*train=*/false, dl::data::transforms::Normalize({0.2860f}, {0.3530f}));
    dl::data::DataLoader loader(test, {.batch_size = 1000});
    dl::NoGradGuard no_grad;
    int64_t correct = 0;
    for (auto& [images, labels] : loader) correct += dl::sum(net(images).argmax(1) == labels).item();
    std::printf("loaded %s into dl::models::lenet5()\n", argv[1]);
    std::printf("dl test accuracy: %.2f%%\n", 100.0 * double(correct) / double(test.size()));
  } catch (const dl::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
