// Scan report text and the --fix lists.
#include "data/index/scan_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "data/io/cache_dir.h"
#include "data/index/label_index.h"
#include "core/atomic_file.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

std::string where(const Fault& f) { return f.line ? f.file + ":" + std::to_string(f.line) : f.file; }

std::string padded(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// "./rel" for a path inside folder, else the path itself.
std::string list_entry(const std::string& path, const std::string& folder) {
  const std::string prefix = folder + "/";
  return path.rfind(prefix, 0) == 0 ? "./" + path.substr(prefix.size()) : path;
}

}  // namespace

std::string format_scan_table(const ScanReport& r, size_t max_listed) {
  std::string out = format_scan_summary(r) + "\n";
  if (r.faults.empty()) return out;
  out += "\n  " + padded("fault", 34) + "  count  example\n";
  for (int k = 0; k < kFaultKindCount; ++k) {
    const FaultKind kind = static_cast<FaultKind>(k);
    const auto first = std::find_if(r.faults.begin(), r.faults.end(), [&](const Fault& f) { return f.kind == kind; });
    if (first == r.faults.end()) continue;
    char count[16];
    std::snprintf(count, sizeof count, "%5zu", r.count(kind));
    out += "  " + padded(fault_kind_info(kind).title, 34) + "  " + count + "  " + where(*first) + "\n";
  }
  out += "\n";
  std::map<FaultKind, size_t> listed;
  for (const Fault& f : r.faults)
    if (listed[f.kind]++ < max_listed)
      out += "  " + where(f) + ": [" + fault_kind_info(f.kind).name + "] " + f.detail + "\n";
  for (const auto& [kind, n] : listed)
    if (n > max_listed)
      out += "  ... and " + std::to_string(n - max_listed) + " more '" + fault_kind_info(kind).title +
             "' (all are in the JSON report)\n";
  return out;
}

std::string format_scan_summary(const ScanReport& r) {
  std::string out = std::to_string(r.images) + " images (" + std::to_string(r.labelled) + " labelled, " +
                    std::to_string(r.backgrounds) + " backgrounds), " + std::to_string(r.instances) + " instances; ";
  std::string faults;
  for (int k = 0; k < kFaultKindCount; ++k) {
    const FaultKind kind = static_cast<FaultKind>(k);
    if (const size_t n = r.count(kind)) faults += (faults.empty() ? "" : ", ") + std::to_string(n) + " " + fault_kind_info(kind).title;
  }
  out += faults.empty() ? "no faults" : "faults: " + faults;
  if (!r.quarantined.empty()) out += "; " + std::to_string(r.quarantined.size()) + " image(s) unfit for training";
  char time[48];
  std::snprintf(time, sizeof time, " (%.1f s%s)", r.seconds, r.from_cache ? ", cached" : "");
  return out + time;
}

FixLists write_fix_lists(const std::string& root,
                         const std::vector<std::pair<std::string, std::vector<std::string>>>& splits,
                         const ScanReport& report) {
  FixLists out;
  if (dir_is_writable(root)) {
    out.folder = root;
  } else {
    const std::string user = user_cache_dir();
    if (user.empty()) throw std::runtime_error(root + " is not writable and there is no user cache folder (set HOME)");
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(root.data(), root.size())));
    out.folder = user + "/fix/" + hex;
  }
  const std::set<std::string> quarantined(report.quarantined.begin(), report.quarantined.end());
  for (const auto& [split, sources] : splits) {
    std::string text;
    size_t kept = 0;
    for (const std::string& image : list_image_files(sources))
      if (!quarantined.count(image)) text += list_entry(image, out.folder) + "\n", ++kept;
    const std::string path = out.folder + "/kestrel_clean_" + split + ".txt";
    write_file_atomic(path, text);
    out.splits.emplace_back(split, path);
    out.kept.push_back(kept);
  }
  std::map<std::string, std::string> reasons;  // file -> its quarantining faults
  for (const Fault& f : report.faults)
    if (fault_kind_info(f.kind).quarantines_image) {
      std::string& why = reasons[f.file];
      why += (why.empty() ? "" : "; ") + std::string(fault_kind_info(f.kind).name) + ": " + f.detail;
    }
  std::string text;
  for (const std::string& image : report.quarantined) {
    std::string why = reasons[image];
    const std::string& label_why = reasons[label_path_for_image(image)];  // an unreadable label file
    why += (why.empty() || label_why.empty() ? "" : "; ") + label_why;
    text += list_entry(image, out.folder) + "\t" + why + "\n";
  }
  out.quarantine = out.folder + "/kestrel_quarantine.txt";
  write_file_atomic(out.quarantine, text);
  return out;
}

}  // namespace kestrel
