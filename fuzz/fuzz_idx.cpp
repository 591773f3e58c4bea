// libFuzzer harness: the IDX reader (MNIST-style files), plain and gzip-compressed. The first byte
// picks the mode: the rest of the input as a plain file, compressed with gzip (so mutations reach
// the IDX parser behind the decompressor), or as raw .gz bytes (so they reach zlib's error paths).
#include <zlib.h>

#include <dl/data/io.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body = fuzz::view(data + 1, size - 1);
  std::filesystem::path path;
  switch (data[0] % 3) {
    case 0: path = fuzz::write_file("input-idx", body); break;
    case 1: {
      path = fuzz::scratch_dir() / "input-idx.gz";
      gzFile gz = gzopen(path.c_str(), "wb1");
      if (!gz) return 0;
      if (!body.empty()) gzwrite(gz, body.data(), unsigned(body.size()));
      gzclose(gz);
      break;
    }
    default: path = fuzz::write_file("raw-idx.gz", body);
  }
  fuzz::expect_load_or_error([&] { (void)dl::data::read_idx(path); });
  fuzz::expect_load_or_error([&] { (void)dl::data::read_idx(path, 3); });
  return 0;
}
