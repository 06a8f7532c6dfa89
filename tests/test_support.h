// Helpers shared by every test binary: locating reference vectors (copied into tests/testdata)
// and the optional ../shared folder (coco128, weights), and reading JSON tensors.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kestrel::test {

// Parsed tests/testdata/reference/<name> (cached per process).
const nlohmann::json& reference(const std::string& name);

// Path of a file under ../shared, or "" when ../shared (or that file) is absent.
std::string shared_path(const std::string& rel);

// The flat "data" array of a JSON tensor {"shape","dtype","data"} as doubles / float32 values
// (floats are parsed as double then cast, which gives the exact float32 the generator wrote).
std::vector<double> json_doubles(const nlohmann::json& t);
std::vector<float> json_floats(const nlohmann::json& t);
std::vector<int64_t> json_shape(const nlohmann::json& t);

// A fresh temporary directory, removed at process exit.
std::string temp_dir(const std::string& tag);

// A model yaml of five strided Conv layers (all `width` channels) and a Detect head on levels
// 2-4 with YOLOv5's default anchors: a step costs little more than moving the batch.
std::string micro_model_yaml(int nc, int width);

// A TCP port on loopback that nothing listened on a moment ago (for data-parallel rendezvous).
int free_tcp_port();

}  // namespace kestrel::test

// Skips the current test with a clear message when a ../shared file is missing.
#define KESTREL_REQUIRE_SHARED(var, rel)                                                  \
  const std::string var = ::kestrel::test::shared_path(rel);                             \
  if (var.empty()) GTEST_SKIP() << "../shared/" << (rel) << " not present (CI has it)"
