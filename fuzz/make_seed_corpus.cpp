// Writes the fuzzer's seed corpus: the tiny synthetic checkpoint of the reader's tests (plain, ZIP64
// with the model under 'ema') and its bare data.pkl. Usage: make_pt_seed_corpus <dir>.

#include "model/pt_fixtures.h"
#include "seed_files.h"

int main(int argc, char** argv) {
  using namespace kestrel::test;
  return kestrel::fuzz::write_seed_files(argc, argv, "make_pt_seed_corpus", {
      {"tiny.pt", tiny_checkpoint()},
      {"tiny_ema_zip64.pt", tiny_checkpoint(/*model_is_none=*/true, /*zip64=*/true)},
      {"tiny_data.pkl", tiny_checkpoint_pickle()}});
}
