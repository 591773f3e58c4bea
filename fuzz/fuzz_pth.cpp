// libFuzzer harness: PyTorch's .pth reader (zip archive + restricted unpickler + storages).
#include <dl/io/pth.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::load_and_touch([&] { return dl::io::from_pth(fuzz::view(data, size)); });
  return 0;
}
