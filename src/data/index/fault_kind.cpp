// Names and properties of the fault kinds.
#include "data/index/fault_kind.h"

namespace kestrel {
namespace {

// In enum order.
constexpr FaultKindInfo kInfo[kFaultKindCount] = {
    {"unreadable_image", "unreadable image", true},
    {"zero_byte_image", "zero-byte image", true},
    {"truncated_image", "truncated image", true},
    {"corrupt_image", "corrupt image", true},
    {"tiny_image", "tiny image (< 10 px)", true},
    {"wrong_extension", "content/extension mismatch", false},
    {"unreadable_label", "unreadable label file", true},
    {"label_columns", "label: wrong column count", false},
    {"label_not_a_number", "label: not a number", false},
    {"label_class_not_integer", "label: class not an integer", false},
    {"label_class_out_of_range", "label: class out of range", false},
    {"label_coordinate_out_of_range", "label: coordinate outside [0,1]", false},
    {"label_nonpositive_size", "label: zero/negative size", false},
    {"label_duplicate_line", "label: duplicate line", false},
    {"label_without_image", "label file without image", false},
};

}  // namespace

const FaultKindInfo& fault_kind_info(FaultKind kind) { return kInfo[static_cast<int>(kind)]; }

bool fault_kind_from_name(const std::string& name, FaultKind* kind) {
  for (int i = 0; i < kFaultKindCount; ++i)
    if (name == kInfo[i].name) {
      *kind = static_cast<FaultKind>(i);
      return true;
    }
  return false;
}

}  // namespace kestrel
