// libFuzzer harness: the CIFAR-10 and CIFAR-100 binary readers (the input is the test batch file).
#include <dl/data/vision.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::view(data, size);
  const auto root = fuzz::scratch_dir();
  fuzz::write_file("test_batch.bin", in);
  fuzz::write_file("test.bin", in);
  static const bool names = [&] {
    std::string fine;
    for (int k = 0; k < 100; ++k) fine += "class" + std::to_string(k) + "\n";
    fuzz::write_file("fine_label_names.txt", fine);
    return true;
  }();
  (void)names;
  fuzz::expect_load_or_error([&] {
    dl::data::CIFAR10<> ds(root, false);
    if (ds.size() > 0) (void)ds.get(ds.size() - 1);
  });
  fuzz::expect_load_or_error([&] {
    dl::data::CIFAR100<> ds(root, false);
    if (ds.size() > 0) (void)ds.get(0);
  });
  return 0;
}
