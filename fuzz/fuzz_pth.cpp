// libFuzzer harness: PyTorch's .pth reader (zip archive + restricted unpickler + storages).
#include <dl/io/pth.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_load_or_error([&] {
    const dl::StateDict sd = dl::io::from_pth(fuzz::view(data, size));
    // Read every element (through a contiguous copy), so a storage shorter than its tensor's
    // extent is an out-of-bounds read the sanitizer reports.
    double sum = 0;
    for (const auto& [name, t] : sd) sum += dl::sum(t.to<double>()).item();
    (void)sum;
  });
  return 0;
}
