// kestrel pack: pack a dataset into one LMDB file, verify a pack, or unpack it (data/pack.h).
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "data/pack/pack.h"
#include "data/index/scan_report.h"
#include "report/progress_callback.h"
#include "data/pack/pack_check.h"

namespace kestrel::cli {
namespace {

std::string megabytes(uint64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MB", bytes / 1e6);
  return s;
}

int report_check(const PackCheck& check, const std::string& what) {
  for (const std::string& p : check.problems) std::cout << "  " << p << "\n";
  std::cout << what << ": " << check.files << " files, " << megabytes(check.bytes) << ", "
            << (check.ok() ? "all checksums match" : std::to_string(check.problems.size()) + " problem(s)") << "\n";
  return check.ok() ? 0 : 1;
}

}  // namespace

void register_pack(CLI::App& app) {
  static PackOptions o;
  static std::string verify, unpack;
  auto* cmd = add_command(app, "pack", "Pack a dataset into one file (LMDB) that loads fast; verify or unpack a pack", [] {
    if (!verify.empty()) {
      ProgressCallback progress("verify");
      const PackCheck check = verify_pack(verify, progress.callback());
      progress.close();
      return report_check(check, verify);
    }
    if (!unpack.empty()) {
      if (o.out.empty()) throw std::runtime_error("--unpack needs --out <folder>");
      return report_check(unpack_pack(unpack, o.out), "unpacked into " + o.out);
    }
    if (o.data_yaml.empty() || o.out.empty())
      throw std::runtime_error("pack needs --data <data.yaml> and --out <file.kpack>");
    ProgressCallback scan_progress("scan"), pack_progress("pack");
    o.scan.progress = scan_progress.callback();
    o.progress = pack_progress.callback();
    const PackSummary s = pack_dataset(o);
    pack_progress.close();
    std::cout << "scan: " << format_scan_summary(s.scan) << "\n";
    std::cout << "packed " << s.images << " images, " << s.labels << " label files";
    if (s.orphan_labels) std::cout << " (+" << s.orphan_labels << " without images)";
    if (!s.unreadable.empty())
      std::cout << "; " << s.unreadable.size() << " unreadable file(s) left out, e.g. " << s.unreadable[0];
    if (o.max_side > 0) std::cout << ", " << s.reencoded << " re-encoded at max side " << o.max_side;
    std::cout << ": " << megabytes(s.source_bytes) << " read -> " << o.out << " " << megabytes(s.pack_bytes);
    std::printf(" in %.1f s\n", s.seconds);
    std::cout << "splits:";
    for (const auto& [name, n] : s.splits) std::cout << " " << name << " " << n;
    std::cout << "\ndata.yaml reading the pack: " << s.yaml_path << "\n";
    return 0;
  });
  cmd->add_option("--data", o.data_yaml, "data.yaml of the dataset to pack");
  cmd->add_option("--out", o.out, "the pack file to write (*.kpack), or the folder to unpack into");
  cmd->add_option("--max-side", o.max_side,
                  "re-encode images whose long side exceeds this (default: store the original bytes)");
  cmd->add_option("--quality", o.jpeg_quality, "JPEG quality of re-encoded images");
  cmd->add_option("--workers", o.threads, "threads (default: all cores)");
  cmd->add_option("--verify", verify, "re-read a pack and check every file against its checksum");
  cmd->add_option("--unpack", unpack, "write a pack's files back into --out (byte-exact)");
}

}  // namespace kestrel::cli
