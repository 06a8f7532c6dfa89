// Console helpers: whether a stream is a terminal, and YOLOv5-style colorstr() that emits ANSI
// colours only for terminals (and never when NO_COLOR is set), so log files stay plain.
#pragma once
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>

namespace kestrel {

enum class Style { Bold, Underline, Red, Green, Yellow, Blue, Magenta, Cyan, White };

// True when `out` is a terminal.
bool is_terminal(std::FILE* out);

// True when colours should be written to `out`: a terminal and NO_COLOR unset.
bool colour_enabled(std::FILE* out);

// text wrapped in the styles' escape codes and a reset, or text unchanged when !enabled.
// YOLOv5 prints section prefixes as colorstr('bold', 'blue', 'optimizer:') etc.
std::string styled(std::string_view text, std::initializer_list<Style> styles, bool enabled);

}  // namespace kestrel
