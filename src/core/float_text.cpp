// shortest_decimal: tries precisions from 1 up.
#include "core/float_text.h"

#include <cstdio>
#include <cstdlib>

namespace kestrel {

std::string shortest_decimal(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace kestrel
