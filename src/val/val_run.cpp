// The val command: index the split, load the model, check its classes, validate, print the table.
#include "val/val_run.h"

#include <filesystem>
#include <iostream>

#include "core/cpu_cores.h"
#include "data/index/dataset_config.h"
#include "data/index/index_report.h"
#include "data/index/label_index.h"
#include "device/device.h"
#include "model/weights.h"
#include "report/run_dir.h"
#include "val/val_saving.h"

namespace fs = std::filesystem;

namespace kestrel {

ValResult run_val(const ValRunOptions& o) {
  const DatasetConfig dc = load_dataset_config(o.data);
  const std::vector<std::string>& split = o.task == "train" ? dc.train : o.task == "test" ? dc.test : dc.val;
  if (split.empty()) throw std::runtime_error(o.data + ": no '" + o.task + ":' split");
  const DatasetIndex index = build_index(split, dc.nc, o.val.single_cls);
  for (const auto& w : index.warnings) std::cerr << "WARNING: " << w << "\n";
  std::cout << o.task << ": " << format_index_stats(index.stats) << "\n";
  torch::set_num_threads(static_cast<int>(usable_cores()));
  const torch::Device dev = parse_device(o.device);
  DetectionModel model = load_inference_model(o.weights, o.cfg, dev);
  if (!o.val.single_cls && model->nc() != dc.nc)
    throw std::runtime_error(o.weights + " (" + std::to_string(model->nc()) + " classes) was trained on other data than " +
                             o.data + " (" + std::to_string(dc.nc) + " classes): pass --weights and --data that were trained together");
  ValOptions vo = o.val;
  vo.ultralytics = model->config().ultralytics;
  // The batch decides which images share a rect shape, so its padding: the family's default gives its numbers.
  vo.batch_size = o.batch_size.value_or(vo.ultralytics ? 16 : 32);
  fit_max_det(vo, {{o.task, most_objects(index.records)}});
  vo.precision = inference_precision(o.half, dev);
  if (o.half) std::cout << "--half: " << precision_name(vo.precision) << " autocast inference\n";
  const std::string save_dir = increment_path(o.project + "/" + o.name, o.exist_ok, "", /*mkdir=*/true);
  ValSaver saver(o.save_txt ? save_dir + "/labels" : "", o.save_conf, o.save_json, is_coco_val(dc.val));
  ValOutputs outputs;
  outputs.plot_dir = o.noplots ? "" : save_dir;
  if (o.save_txt || o.save_json) outputs.on_image = [&](const std::string& path, const torch::Tensor& predn, const LetterboxInfo& shape) {
    saver.add(path, predn, shape);
  };
  Validator validator(index.records, model->names(), vo);
  const ValResult r = validator.run(*model, dev, nullptr, outputs);
  std::cout << format_val_table(r.metrics, model->names(), o.verbose || model->nc() < 50)
            << format_val_speed(r, vo.img_size, vo.batch_size) << "\n";
  if (o.save_json) {
    const std::string json = save_dir + "/" + fs::path(o.weights).stem().string() + "_predictions.json";
    const size_t n = saver.write_json(json);
    std::cout << "Saved " << n << " detections to " << json << " (COCO results format; score it with pycocotools' COCOeval)\n";
  }
  if (o.save_txt) std::cout << saver.label_files() << " labels saved to " << save_dir << "/labels\n";
  std::cout << "Results saved to " << save_dir << "\n";
  return r;
}

}  // namespace kestrel
