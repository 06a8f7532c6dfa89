// A YOLOv5 .pt checkpoint interpreted down to tensor references, without LibTorch: the zip archive,
// its data.pkl, and the pickled DetectionModel walked into state_dict() names, yaml, names, stride.
// pt_reader turns the tensor references into torch::Tensors; this part is what the fuzzer drives.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/pickle_reader.h"
#include "model/zip_reader.h"

namespace kestrel {

class PtArchive {
 public:
  // Parses and validates the whole archive; throws FormatError ("<label>: <what>") on any problem.
  // `verify_crc` checks the CRC-32 of data.pkl and every storage (off only for fuzzing, where it
  // would stop most mutations at the door).
  PtArchive(std::shared_ptr<const std::vector<uint8_t>> bytes, const std::string& label,
            bool verify_crc = true);

  const pickle::Document& document() const { return doc_; }
  const ZipArchive& zip() const { return zip_; }

  // state_dict() of the checkpoint's model (or ema when model is None), in state_dict order.
  const std::vector<std::pair<std::string, pickle::TensorRef>>& state() const { return state_; }
  const std::string& model_yaml() const { return model_yaml_; }  // "" when the model has no yaml
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<double>& stride() const { return stride_; }
  int nc() const { return nc_; }
  const std::string& source() const { return source_; }  // "model" or "ema"
  std::optional<int64_t> epoch() const { return epoch_; }
  std::optional<double> best_fitness() const { return best_fitness_; }

  // The bytes of a storage (already checked to hold its declared element count).
  ByteView storage_bytes(uint32_t storage) const;
  // A small tensor's elements in row-major order, converted to double.
  std::vector<double> values(const pickle::TensorRef& t) const;

 private:
  [[noreturn]] void fail(const std::string& what) const { zip_.fail(what); }
  void check_storages(bool verify_crc);
  void collect_module(pickle::NodeId module, const std::string& prefix, int depth, size_t* visits);
  void read_model_attributes(pickle::NodeId model_dict);
  std::string string_key(pickle::NodeId key, const std::string& where) const;

  ZipArchive zip_;
  std::string prefix_;  // "<archive>/"
  pickle::Document doc_;
  std::vector<ByteView> storage_bytes_;
  std::vector<std::pair<std::string, pickle::TensorRef>> state_;
  std::string model_yaml_;
  std::vector<std::string> names_;
  std::vector<double> stride_;
  int nc_ = 0;
  std::string source_;
  std::optional<int64_t> epoch_;
  std::optional<double> best_fitness_;
};

// A pickled dict of plain data (the model's `yaml`) as YAML text that yaml-cpp reads back to the
// same structure: block style at the top level, flow style inside. Throws FormatError on values that
// are not plain data (objects, tensors) or nesting deeper than 32.
std::string pickle_to_yaml(const pickle::Document& doc, pickle::NodeId dict);

}  // namespace kestrel
