// Terminal detection and ANSI styling (see console.h).
#include "report/console.h"

#include <unistd.h>

#include <cstdlib>

namespace kestrel {
namespace {

const char* code(Style s) {
  switch (s) {
    case Style::Bold: return "\033[1m";
    case Style::Underline: return "\033[4m";
    case Style::Red: return "\033[31m";
    case Style::Green: return "\033[32m";
    case Style::Yellow: return "\033[33m";
    case Style::Blue: return "\033[34m";
    case Style::Magenta: return "\033[35m";
    case Style::Cyan: return "\033[36m";
    case Style::White: return "\033[37m";
  }
  return "";
}

}  // namespace

bool is_terminal(std::FILE* out) { return out && isatty(fileno(out)); }

bool colour_enabled(std::FILE* out) { return is_terminal(out) && !std::getenv("NO_COLOR"); }

std::string styled(std::string_view text, std::initializer_list<Style> styles, bool enabled) {
  if (!enabled) return std::string(text);
  std::string out;
  for (Style s : styles) out += code(s);
  out += text;
  out += "\033[0m";
  return out;
}

}  // namespace kestrel
