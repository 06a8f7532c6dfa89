// One loss interface over the two families' losses (see detection_loss.h).
#include "train/detection_loss.h"

#include <memory>

#include "train/dfl_loss.h"
#include "train/loss.h"

namespace kestrel {

DetectionLoss make_detection_loss(const DetectionModelImpl& model, const Hyp& hyp, int img_size, const torch::Device& device) {
  if (!model.anchor_free()) {
    auto loss = std::make_shared<YoloLoss>(loss_config_from_hyp(hyp, static_cast<int>(model.nc()), static_cast<int>(model.nl()),
                                                                img_size, model.anchors().to(device)));
    return [loss](const std::vector<torch::Tensor>& raw, const torch::Tensor& targets) { return (*loss)(raw, targets); };
  }
  DflLossConfig c;
  c.nc = model.nc();
  c.reg_max = model.config().reg_max;
  c.strides = model.stride();
  c.box = hyp.box, c.cls = hyp.cls, c.dfl = hyp.dfl;
  auto loss = std::make_shared<DflDetectionLoss>(c);
  return [loss](const std::vector<torch::Tensor>& raw, const torch::Tensor& targets) { return (*loss)(raw, targets); };
}

std::array<std::string, 3> loss_names(const DetectionModelImpl& model) {
  if (model.anchor_free()) return {"box_loss", "cls_loss", "dfl_loss"};
  return {"box_loss", "obj_loss", "cls_loss"};
}

}  // namespace kestrel
