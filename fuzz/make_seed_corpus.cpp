// Writes the fuzzer's seed corpus: the tiny synthetic checkpoint of the reader's tests (plain, ZIP64
// with the model under 'ema') and its bare data.pkl. Usage: make_pt_seed_corpus <dir>.
#include <fstream>
#include <iostream>
#include <string>

#include "model/pt_fixtures.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_pt_seed_corpus <dir>\n";
    return 2;
  }
  using namespace kestrel::test;
  const std::pair<const char*, Bytes> seeds[] = {
      {"tiny.pt", tiny_checkpoint()},
      {"tiny_ema_zip64.pt", tiny_checkpoint(/*model_is_none=*/true, /*zip64=*/true)},
      {"tiny_data.pkl", tiny_checkpoint_pickle()}};
  for (const auto& [name, bytes] : seeds) {
    std::ofstream out(std::string(argv[1]) + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::cerr << "cannot write " << name << "\n";
      return 1;
    }
  }
  return 0;
}
