// The shortest decimal that reads back as the same double (Python's repr of a float, up to its
// spelling of integral values, infinities and NaN, which callers choose).
#pragma once
#include <string>

namespace kestrel {

// "%.*g" with the fewest digits (1..17) that strtod reads back exactly: 0.1 -> "0.1", 1e-05, 3.
std::string shortest_decimal(double v);

}  // namespace kestrel
