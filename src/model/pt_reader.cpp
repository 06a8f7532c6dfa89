// Turns PtArchive's validated tensor references into torch::Tensors: one copy of each storage's
// bytes into an aligned tensor, then the (size, stride, offset) view copied out as float32.
#include "model/pt_reader.h"

#include <cstring>

#include "model/pt_archive.h"

namespace kestrel {
namespace {

torch::Dtype torch_dtype(pickle::ScalarType t) {
  using pickle::ScalarType;
  switch (t) {
    case ScalarType::Half: return torch::kHalf;
    case ScalarType::BFloat16: return torch::kBFloat16;
    case ScalarType::Float: return torch::kFloat32;
    case ScalarType::Double: return torch::kFloat64;
    case ScalarType::Long: return torch::kInt64;
    case ScalarType::Int: return torch::kInt32;
    case ScalarType::Short: return torch::kInt16;
    case ScalarType::Char: return torch::kInt8;
    case ScalarType::Byte: return torch::kUInt8;
    case ScalarType::Bool: return torch::kBool;
  }
  return torch::kFloat32;
}

}  // namespace

PtCheckpoint read_pt_checkpoint(const std::string& path) {
  const PtArchive archive(read_file_bytes(path), path);
  const auto& storages = archive.document().storages();
  std::map<uint32_t, torch::Tensor> loaded;  // storage index -> its elements, flat

  PtCheckpoint out;
  for (const auto& [name, ref] : archive.state()) {
    auto it = loaded.find(ref.storage);
    if (it == loaded.end()) {
      const pickle::StorageRef& s = storages[ref.storage];
      torch::Tensor flat = torch::empty({static_cast<int64_t>(s.numel)}, torch_dtype(s.dtype));
      std::memcpy(flat.data_ptr(), archive.storage_bytes(ref.storage).data,
                  s.numel * pickle::element_size(s.dtype));
      it = loaded.emplace(ref.storage, flat).first;
    }
    const torch::Tensor view = it->second.as_strided(ref.sizes, ref.strides, ref.offset);
    const torch::Dtype dtype = view.is_floating_point() ? torch::kFloat32 : view.scalar_type();
    out.state[name] = torch::empty(ref.sizes, torch::TensorOptions().dtype(dtype)).copy_(view);
    out.state_order.push_back(name);
  }
  out.model_yaml = archive.model_yaml();
  out.names = archive.names();
  out.stride = archive.stride();
  out.nc = archive.nc();
  out.source = archive.source();
  out.epoch = archive.epoch();
  out.best_fitness = archive.best_fitness();
  return out;
}

}  // namespace kestrel
