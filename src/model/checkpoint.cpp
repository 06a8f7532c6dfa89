// Kestrel checkpoints: LibTorch archive with nested model / EMA / optimizer archives and a JSON
// metadata string; atomic replacement of the file (see checkpoint.h).
#include "model/checkpoint.h"
#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace kestrel {
namespace {

constexpr int kFormatVersion = 1;

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &local);
  return buf;
}

nlohmann::json meta_to_json(const CheckpointMeta& m) {
  return {{"kestrel_checkpoint", kFormatVersion},
          {"epoch", m.epoch},
          {"best_fitness", m.best_fitness},
          {"ema_updates", m.ema_updates},
          {"model_yaml", m.model_yaml},
          {"model_name", m.model_name},
          {"pruned_shapes", m.pruned_shapes},
          {"nc", m.nc > 0 ? m.nc : static_cast<int>(m.names.size())},
          {"names", m.names},
          {"train_options", m.train_options},
          {"resume_point", m.resume_point},
          {"date", m.date.empty() ? now_iso8601() : m.date},
          {"has_ema", m.has_ema},
          {"has_optimizer", m.has_optimizer},
          {"has_grads", m.has_grads}};
}

CheckpointMeta meta_from_json(const nlohmann::json& j) {
  CheckpointMeta m;
  m.epoch = j.at("epoch").get<int>();
  m.best_fitness = j.at("best_fitness").get<double>();
  m.ema_updates = j.at("ema_updates").get<int64_t>();
  m.model_yaml = j.at("model_yaml").get<std::string>();
  m.model_name = j.value("model_name", "");
  if (j.contains("pruned_shapes")) j.at("pruned_shapes").get_to(m.pruned_shapes);
  m.names = j.at("names").get<std::vector<std::string>>();
  m.nc = j.value("nc", static_cast<int>(m.names.size()));  // files before the field: one name per class
  m.train_options = j.at("train_options");
  m.date = j.at("date").get<std::string>();
  m.has_ema = j.at("has_ema").get<bool>();
  m.has_optimizer = j.at("has_optimizer").get<bool>();
  m.resume_point = j.value("resume_point", nlohmann::json::object());  // absent in files before exact resume
  m.has_grads = j.value("has_grads", false);
  return m;
}

// Device the module's state lives on (CPU when it has none), so loaded tensors land there.
torch::Device state_device(const torch::nn::Module* m) {
  if (m) {
    for (const auto& p : m->parameters()) return p.device();
    for (const auto& b : m->buffers()) return b.device();
  }
  return torch::kCPU;
}

// LibTorch's Optimizer::load restores the per-parameter state but not the groups' options
// (PyTorch's load_state_dict restores both); read them back from the archive it wrote.
template <typename Options>
bool restore_group_options(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimizer) {
  if (!dynamic_cast<Options*>(&optimizer.param_groups().at(0).options())) return false;
  torch::serialize::InputArchive groups;
  archive.read("param_groups", groups);
  for (size_t i = 0; i < optimizer.param_groups().size(); ++i) {
    torch::serialize::InputArchive group, options_archive;
    groups.read("param_groups/" + std::to_string(i), group);
    group.read("options", options_archive);
    Options options(0);
    options.serialize(options_archive);
    optimizer.param_groups()[i].set_options(std::make_unique<Options>(options));
  }
  return true;
}

void load_optimizer(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimizer) {
  optimizer.load(archive);
  if (optimizer.param_groups().empty()) return;
  restore_group_options<torch::optim::SGDOptions>(archive, optimizer) ||
      restore_group_options<torch::optim::AdamOptions>(archive, optimizer) ||
      restore_group_options<torch::optim::AdamWOptions>(archive, optimizer);
}

}  // namespace

std::string serialize_checkpoint(const CheckpointMeta& meta, const torch::nn::Module& model,
                                 const torch::nn::Module* ema, const torch::optim::Optimizer* optimizer,
                                 bool with_grads) {
  CheckpointMeta stored = meta;
  stored.has_ema = ema != nullptr;
  stored.has_optimizer = optimizer != nullptr;
  stored.has_grads = with_grads;
  torch::serialize::OutputArchive root;
  root.write("meta", c10::IValue(meta_to_json(stored).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  root.write("model", model_archive);
  if (ema) {
    torch::serialize::OutputArchive ema_archive;
    ema->save(ema_archive);
    root.write("ema", ema_archive);
  }
  if (optimizer) {
    torch::serialize::OutputArchive optimizer_archive;
    optimizer->save(optimizer_archive);
    root.write("optimizer", optimizer_archive);
  }
  if (with_grads) {
    // Keyed by parameter position: the architecture is the checkpoint's own.
    torch::serialize::OutputArchive grads_archive;
    const auto params = model.parameters();
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].grad().defined()) grads_archive.write(std::to_string(i), params[i].grad(), /*is_buffer=*/true);
    root.write("grads", grads_archive);
  }
  std::ostringstream out;
  root.save_to(out);
  return std::move(out).str();
}

void save_checkpoint(const std::string& path, const CheckpointMeta& meta, const torch::nn::Module& model,
                     const torch::nn::Module* ema, const torch::optim::Optimizer* optimizer, bool with_grads) {
  write_file_atomic(path, serialize_checkpoint(meta, model, ema, optimizer, with_grads));
}

bool load_gradients(const std::string& path, torch::nn::Module& model) {
  torch::serialize::InputArchive root;
  root.load_from(path, state_device(&model));
  torch::serialize::InputArchive grads;
  if (!root.try_read("grads", grads)) return false;
  auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor g;
    if (grads.try_read(std::to_string(i), g, /*is_buffer=*/true)) params[i].mutable_grad() = g.detach();
  }
  return true;
}

CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module* model, torch::nn::Module* ema,
                               torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive root;
  try {
    root.load_from(path, state_device(model ? model : ema));
  } catch (const c10::Error& e) {
    throw std::runtime_error(path + ": not a readable Kestrel checkpoint: " + e.what_without_backtrace());
  }
  c10::IValue meta_text;
  if (!root.try_read("meta", meta_text) || !meta_text.isString())
    throw std::runtime_error(path + ": not a Kestrel checkpoint (no metadata)");
  const nlohmann::json j = nlohmann::json::parse(meta_text.toStringRef());
  if (j.value("kestrel_checkpoint", 0) != kFormatVersion)
    throw std::runtime_error(path + ": unsupported checkpoint format version");
  CheckpointMeta meta = meta_from_json(j);

  const auto restore = [&](const char* key, bool present, auto&& load_into) {
    if (!present) throw std::runtime_error(path + ": checkpoint holds no " + key + " state");
    torch::serialize::InputArchive nested;
    root.read(key, nested);
    try {
      load_into(nested);
    } catch (const c10::Error& e) {
      throw std::runtime_error(path + ": " + key + " state does not match: " + e.what_without_backtrace());
    }
  };
  torch::NoGradGuard no_grad;
  if (model) restore("model", true, [&](torch::serialize::InputArchive& a) { model->load(a); });
  if (ema) restore("ema", meta.has_ema, [&](torch::serialize::InputArchive& a) { ema->load(a); });
  if (optimizer)
    restore("optimizer", meta.has_optimizer, [&](torch::serialize::InputArchive& a) { load_optimizer(a, *optimizer); });
  return meta;
}

void strip_checkpoint(const std::string& path, torch::nn::Module& scratch) {
  CheckpointMeta meta = load_checkpoint(path, nullptr, nullptr, nullptr);
  if (meta.has_ema)
    load_checkpoint(path, nullptr, &scratch, nullptr);
  else
    load_checkpoint(path, &scratch, nullptr, nullptr);
  meta.epoch = -1;
  meta.ema_updates = 0;
  meta.resume_point = nlohmann::json::object();
  save_checkpoint(path, meta, scratch, nullptr, nullptr);
}

}  // namespace kestrel
