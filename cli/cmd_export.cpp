// kestrel export: flags -> run_export (src/export/export_run.h).
#include "commands.h"
#include "export/export_run.h"

namespace kestrel::cli {

void register_export(CLI::App& app) {
  static ExportRunOptions o;
  auto* cmd = add_command(app, "export", "Write a trained model as ONNX (checked by reading it back with OpenCV dnn)", [] {
    run_export(o);
    return 0;
  });
  cmd->add_option("--weights", o.weights, "a trained model: Kestrel checkpoint or YOLOv5 .pt")->required();
  cmd->add_option("--cfg", o.cfg, "model yaml, for weights that carry none");
  cmd->add_option("--include", o.include, "formats to write: onnx");
  cmd->add_option("--imgsz,--img,--img-size", o.imgsz, "input size of the exported graph: one size, or H W")
      ->expected(1, 2)
      ->check(CLI::PositiveNumber);
}

}  // namespace kestrel::cli
