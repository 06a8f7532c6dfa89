// The training loss of a model, whichever family its head belongs to: YOLOv5's anchor-based
// ComputeLoss (train/loss.h) or Ultralytics' v8DetectionLoss (train/dfl_loss.h), built from the
// model and the run's hyperparameters as each family's trainer builds it. The trainer, its
// validation loss and the step benchmarks call it the same way.
#pragma once
#include <torch/torch.h>

#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/hyp.h"
#include "model/detection_model.h"

namespace kestrel {

// (raw per-level head outputs, targets [n, 6]) -> (sum of the three terms x batch, shape [1];
// the three terms, detached).
using DetectionLoss = std::function<std::pair<torch::Tensor, torch::Tensor>(const std::vector<torch::Tensor>&,
                                                                            const torch::Tensor&)>;

// YOLOv5: gains rescaled by levels, classes and img_size (loss_config_from_hyp), the model's anchors.
// Ultralytics: box, cls and dfl gains as given, the model's strides and reg_max.
DetectionLoss make_detection_loss(const DetectionModelImpl& model, const Hyp& hyp, int img_size, const torch::Device& device);

// The three terms' names as each family's trainer prints them: box, obj, cls or box, cls, dfl.
std::array<std::string, 3> loss_names(const DetectionModelImpl& model);

}  // namespace kestrel
