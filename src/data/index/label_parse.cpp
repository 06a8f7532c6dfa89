// YOLO label text -> labels and per-line faults.
#include "data/index/label_parse.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>

namespace kestrel {
namespace {

using Row = std::array<float, 5>;

// One number as Python's float() reads it, then cast to float32 (numpy's str -> float32 path).
// "nan" and "inf" are refused: YOLOv5 rejects every row holding one, and "not a number" says why.
bool parse_number(std::string_view token, float* out) {
  const char* begin = token.data();
  const char* end = begin + token.size();
  if (begin != end && *begin == '+') ++begin;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return false;
  *out = static_cast<float>(v);
  return true;
}

struct Line {
  size_t number;
  std::vector<std::string_view> tokens;
};

// Non-blank lines with their 1-based numbers; a line ends at \n, \r\n or \r.
std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  size_t line_no = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    Line line{line_no, {}};
    for (size_t i = pos; i < end;) {
      while (i < end && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      size_t j = i;
      while (j < end && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j > i) line.tokens.push_back(text.substr(i, j - i));
      i = j;
    }
    if (!line.tokens.empty()) lines.push_back(std::move(line));
    if (end < text.size() && text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') ++end;
    pos = end + 1;
  }
  return lines;
}

// The row of one line, or the fault that rejects it.
struct RowResult {
  Row row{};
  bool ok = false;
  FaultKind kind = FaultKind::label_columns;
  std::string detail;
  bool keep_with_fault = false;  // usable, but worth reporting (zero size)
};

RowResult check_line(const Line& line, bool polygons, int nc, bool single_cls) {
  RowResult r;
  auto fail = [&](FaultKind kind, std::string detail) {
    r.kind = kind;
    r.detail = std::move(detail);
    return r;
  };
  const auto& tokens = line.tokens;
  std::vector<float> v(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!parse_number(tokens[i], &v[i]))
      return fail(FaultKind::label_not_a_number, "not a number: '" + std::string(tokens[i]) + "'");
  Row row{v[0], 0, 0, 0, 0};
  if (!polygons) {
    if (tokens.size() != 5)
      return fail(FaultKind::label_columns, "expected 5 columns (class x y w h), got " + std::to_string(tokens.size()));
    std::copy(v.begin() + 1, v.end(), row.begin() + 1);
  } else {
    const size_t coords = tokens.size() - 1;
    if (coords < 2 || coords % 2 != 0)
      return fail(FaultKind::label_columns, "a polygon row needs class and an even number of coordinates, got " +
                                                std::to_string(tokens.size()) + " columns");
    float x1 = v[1], y1 = v[2], x2 = v[1], y2 = v[2];
    for (size_t i = 1; i + 1 < v.size(); i += 2) {
      x1 = std::min(x1, v[i]), x2 = std::max(x2, v[i]);
      y1 = std::min(y1, v[i + 1]), y2 = std::max(y2, v[i + 1]);
    }
    row = {v[0], (x1 + x2) / 2.0f, (y1 + y2) / 2.0f, x2 - x1, y2 - y1};  // float32, as xyxy2xywh
  }
  const float cls = row[0];
  const std::string cls_text(tokens[0]);
  if (cls < 0) return fail(FaultKind::label_class_out_of_range, "negative class " + cls_text);
  if (cls != std::floor(cls)) return fail(FaultKind::label_class_not_integer, "class must be an integer, got " + cls_text);
  if (!single_cls && cls >= static_cast<float>(nc))
    return fail(FaultKind::label_class_out_of_range, "class " + cls_text + " exceeds nc=" + std::to_string(nc) +
                                                         " (classes are 0.." + std::to_string(nc - 1) + ")");
  if (row[3] < 0 || row[4] < 0) return fail(FaultKind::label_nonpositive_size, "negative width or height");
  if (!std::all_of(row.begin() + 1, row.end(), [](float c) { return c >= 0 && c <= 1; }))
    return fail(FaultKind::label_coordinate_out_of_range, "coordinates must be normalized to [0, 1]");
  r.row = row;
  r.ok = true;
  if (row[3] == 0 || row[4] == 0) {
    r.kind = FaultKind::label_nonpositive_size;
    r.detail = "zero width or height";
    r.keep_with_fault = true;
  }
  return r;
}

}  // namespace

ParsedLabels parse_label_text(std::string_view text, int nc, bool single_cls) {
  ParsedLabels out;
  const std::vector<Line> lines = split_lines(text);
  const bool polygons = std::any_of(lines.begin(), lines.end(), [](const Line& l) { return l.tokens.size() > 6; });

  std::vector<Row> rows;
  std::map<Row, size_t> first_line_of;  // row -> the line that first gave it
  for (const Line& line : lines) {
    const RowResult r = check_line(line, polygons, nc, single_cls);
    if (!r.ok) {
      ++out.skipped_lines;
      out.faults.push_back({r.kind, line.number, r.detail, true});
      continue;
    }
    const auto [it, first] = first_line_of.emplace(r.row, line.number);
    if (!first) {
      ++out.duplicates;
      out.faults.push_back(
          {FaultKind::label_duplicate_line, line.number, "same row as line " + std::to_string(it->second), true});
      continue;
    }
    if (r.keep_with_fault) out.faults.push_back({r.kind, line.number, r.detail, false});
    rows.push_back(r.row);
  }
  // YOLOv5 deduplicates with np.unique(axis=0): when a duplicate existed the rows come back sorted.
  if (out.duplicates) std::sort(rows.begin(), rows.end());
  out.labels.reserve(rows.size());
  for (const Row& r : rows) out.labels.push_back({single_cls ? 0.0f : r[0], r[1], r[2], r[3], r[4]});
  return out;
}

}  // namespace kestrel
