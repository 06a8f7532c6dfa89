// libFuzzer target for the YOLO label parser (data/label_parse.h). The first byte picks nc (1..128) and
// single_cls; the rest is the label text. Besides sanitizer reports, a broken promise of the parser traps:
// kept labels have a class in [0, nc) (0 with single_cls) and x, y, w, h in [0, 1]; faults come in line
// order, one per line at most, each on a line that exists; every non-blank line is kept or faulted.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/index/label_parse.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// Lines as the parser counts them: \n, \r\n and \r each end one.
size_t count_lines(std::string_view text) {
  size_t lines = 1;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || (text[i] == '\r' && !(i + 1 < text.size() && text[i + 1] == '\n'))) ++lines;
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  if (size == 0) return 0;
  const int nc = 1 + (data[0] & 0x7f);
  const bool single_cls = (data[0] & 0x80) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const ParsedLabels parsed = parse_label_text(text, nc, single_cls);

  for (const Label& l : parsed.labels) {
    require(l.cls >= 0 && (single_cls ? l.cls == 0 : l.cls < static_cast<float>(nc)));
    for (float v : {l.x, l.y, l.w, l.h}) require(v >= 0 && v <= 1);
  }
  const size_t lines = count_lines(text);
  size_t previous = 0, skipped = 0, kept_with_fault = 0;
  for (const LabelLineFault& f : parsed.faults) {
    require(f.line > previous && f.line <= lines);
    require(!f.detail.empty());
    previous = f.line;
    f.skipped ? ++skipped : ++kept_with_fault;
  }
  require(skipped == parsed.skipped_lines + parsed.duplicates);
  require(kept_with_fault <= parsed.labels.size());
  return 0;
}
