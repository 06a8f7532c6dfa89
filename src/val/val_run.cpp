// The val command: index the split, load the model, check its classes, validate, print the table.
#include "val/val_run.h"

#include <iostream>
#include <thread>

#include "data/index/dataset_config.h"
#include "data/index/index_report.h"
#include "data/index/label_index.h"
#include "model/weights.h"
#include "val/batch_tensors.h"

namespace kestrel {

ValResult run_val(const ValRunOptions& o) {
  const DatasetConfig dc = load_dataset_config(o.data);
  const std::vector<std::string>& split = o.task == "train" ? dc.train : o.task == "test" ? dc.test : dc.val;
  if (split.empty()) throw std::runtime_error(o.data + ": no '" + o.task + ":' split");
  const DatasetIndex index = build_index(split, dc.nc, o.val.single_cls);
  for (const auto& w : index.warnings) std::cerr << "WARNING: " << w << "\n";
  std::cout << o.task << ": " << format_index_stats(index.stats) << "\n";
  torch::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  const torch::Device dev = parse_device(o.device);
  DetectionModel model = load_inference_model(o.weights, o.cfg, dev);
  if (!o.val.single_cls && model->nc() != dc.nc)
    throw std::runtime_error(o.weights + " (" + std::to_string(model->nc()) + " classes) was trained on other data than " +
                             o.data + " (" + std::to_string(dc.nc) + " classes): pass --weights and --data that were trained together");
  ValOptions vo = o.val;
  vo.precision = inference_precision(o.half, dev);
  if (o.half) std::cout << "--half: " << precision_name(vo.precision) << " autocast inference\n";
  Validator validator(index.records, model->names(), vo);
  const ValResult r = validator.run(*model, dev);
  std::cout << format_val_table(r.metrics, model->names(), o.verbose || model->nc() < 50)
            << format_val_speed(r, o.val.img_size, o.val.batch_size) << "\n";
  return r;
}

}  // namespace kestrel
