// The model yamls of cfg/models, embedded into the binary at build time (CMake writes the
// definition of builtin_model_yamls() into the build folder), so `--cfg yolov5n.yaml` works
// from any folder.
#pragma once
#include <vector>

namespace kestrel {

struct BuiltinYaml {
  const char* name;  // file name, e.g. "yolov5n.yaml"
  const char* text;  // the file's contents
};

const std::vector<BuiltinYaml>& builtin_model_yamls();

}  // namespace kestrel
