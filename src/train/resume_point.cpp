// ResumePoint <-> JSON.
#include "train/resume_point.h"

namespace kestrel {

void to_json(nlohmann::json& j, const ResumePoint& p) {
  j = {{"epoch", p.epoch},
       {"batch", p.batch},
       {"last_opt_step", p.last_opt_step},
       {"mloss", p.mloss},
       {"stopper", {{"best_epoch", p.stopper.best_epoch}, {"best_fitness", p.stopper.best_fitness},
                    {"possible_stop", p.stopper.possible_stop}}},
       {"val_metrics", p.val_metrics},
       {"val_loss", p.val_loss},
       {"loss_scale", p.loss_scale},
       {"scale_growth_tracker", p.scale_growth_tracker}};
}

void from_json(const nlohmann::json& j, ResumePoint& p) {
  j.at("epoch").get_to(p.epoch);
  j.at("batch").get_to(p.batch);
  j.at("last_opt_step").get_to(p.last_opt_step);
  j.at("mloss").get_to(p.mloss);
  const auto& s = j.at("stopper");
  s.at("best_epoch").get_to(p.stopper.best_epoch);
  s.at("best_fitness").get_to(p.stopper.best_fitness);
  s.at("possible_stop").get_to(p.stopper.possible_stop);
  j.at("val_metrics").get_to(p.val_metrics);
  j.at("val_loss").get_to(p.val_loss);
  if (j.contains("loss_scale")) j.at("loss_scale").get_to(p.loss_scale);  // absent before mixed precision
  if (j.contains("scale_growth_tracker")) j.at("scale_growth_tracker").get_to(p.scale_growth_tracker);
}

}  // namespace kestrel
