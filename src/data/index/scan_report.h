// Presenting a ScanReport: the summary table `kestrel scan` prints, the one-line summary training
// prints, and `scan --fix`'s cleaned image lists.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "data/index/scan.h"

namespace kestrel {

// Counts per fault kind (an example file for each), then the faults themselves, at most
// max_listed per kind (the JSON report has them all).
std::string format_scan_table(const ScanReport& report, size_t max_listed = 10);
// "128 images (126 labelled, 2 backgrounds), 929 instances; faults: 3 zero-byte image, ...; 2 images
// quarantined" or "...; no faults".
std::string format_scan_summary(const ScanReport& report);

struct FixLists {
  std::string folder;                                        // where the lists went
  std::vector<std::pair<std::string, std::string>> splits;  // split name -> cleaned image list
  std::vector<size_t> kept;                                  // images kept per split
  std::string quarantine;                                    // quarantine list
};

// For each (split, sources): writes "kestrel_clean_<split>.txt", the split's images without the quarantined
// ones, as a YOLOv5 list file; and "kestrel_quarantine.txt": each quarantined image, a tab, its faults.
// They go into `root` (the dataset root) when it is writable, else into user_cache_dir()/fix/<hash of root>/.
// Paths under the list's folder are written "./relative" (portable with the data), others absolute.
// Nothing else is written; the user's files are never modified.
FixLists write_fix_lists(const std::string& root,
                         const std::vector<std::pair<std::string, std::vector<std::string>>>& splits,
                         const ScanReport& report);

}  // namespace kestrel
