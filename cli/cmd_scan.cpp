// kestrel scan: dataset health check (data/scan.h), summary table, JSON report, --fix lists.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "data/io/cache_dir.h"
#include "data/index/dataset_config.h"
#include "data/index/scan.h"
#include "data/index/scan_report.h"
#include "report/progress_callback.h"
#include "core/atomic_file.h"

namespace kestrel::cli {

void register_scan(CLI::App& app) {
  static std::string data, json;
  static bool fix = false, no_cache = false, single_cls = false;
  static unsigned workers = 0;
  static size_t list = 10;
  auto* cmd = add_command(app, "scan", "Find corrupt images and bad labels in a dataset (never modifies it)", [] {
    const DatasetConfig cfg = load_dataset_config(data);
    std::vector<std::pair<std::string, std::vector<std::string>>> splits = {{"train", cfg.train}, {"val", cfg.val}};
    if (!cfg.test.empty()) splits.emplace_back("test", cfg.test);
    std::vector<std::string> sources;
    for (const auto& [name, split_sources] : splits)
      for (const std::string& s : split_sources)
        if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);

    ProgressCallback progress("scan");
    ScanOptions o;
    o.nc = cfg.nc, o.single_cls = single_cls, o.threads = workers, o.use_cache = !no_cache;
    o.progress = progress.callback();
    const ScanReport report = scan_dataset(sources, o);
    progress.close();
    std::cout << "scan " << data << ": " << format_scan_table(report, list);

    const std::string json_path =
        json.empty() ? "runs/scan/" + std::filesystem::path(data).stem().string() + ".json" : json;
    write_file_atomic(json_path, scan_report_to_json(report) + "\n");
    std::cout << "JSON report: " << json_path << "\n";
    if (fix) {
      const FixLists lists = write_fix_lists(cfg.root, splits, report);
      std::cout << "--fix: quarantine list " << lists.quarantine << " (" << report.quarantined.size() << " images)\n";
      const bool beside = lists.folder == cfg.root;
      std::cout << "  to train without the quarantined images, set in " << data << ":\n";
      for (size_t i = 0; i < lists.splits.size(); ++i) {
        const auto& [split, path] = lists.splits[i];
        std::cout << "    " << split << ": "
                  << (beside ? std::filesystem::path(path).filename().string() : path) << "  # "
                  << lists.kept[i] << " images\n";
      }
      std::cout << "  (nothing in the dataset was changed or deleted)\n";
    }
    return 0;
  });
  cmd->add_option("--data", data, "data.yaml (train, val and test are scanned)")->required();
  cmd->add_flag("--fix", fix, "write cleaned image lists and a quarantine list (beside the data, else in the cache folder)");
  cmd->add_option("--json", json, "where to write the JSON report (default runs/scan/<data name>.json)");
  cmd->add_option("--workers", workers, "threads (default: all cores)");
  cmd->add_option("--list", list, "faults listed per kind in the table");
  cmd->add_flag("--no-cache", no_cache, "rescan even when a valid cached scan exists");
  cmd->add_flag("--single-cls", single_cls, "check labels as --single-cls training reads them");
}

}  // namespace kestrel::cli
