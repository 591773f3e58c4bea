// libFuzzer harness: the safetensors reader (what dl::load runs on a .safetensors file), then a read
// of every element of every tensor it returned.
#include <dl/io/safetensors.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::load_and_touch([&] { return dl::io::from_safetensors(fuzz::view(data, size)); });
  return 0;
}
