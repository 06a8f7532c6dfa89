// The one step every seed-corpus generator shares: write named byte strings into the folder given
// on the command line.
#pragma once
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace kestrel::fuzz {

using Seed = std::pair<std::string, std::vector<unsigned char>>;

// Writes each seed as <dir>/<name>; returns main's exit status (2: usage, 1: a write failed).
inline int write_seed_files(int argc, char** argv, const char* program, const std::vector<Seed>& seeds) {
  if (argc != 2) {
    std::cerr << "usage: " << program << " <dir>\n";
    return 2;
  }
  for (const auto& [name, bytes] : seeds) {
    std::ofstream out(std::string(argv[1]) + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::cerr << "cannot write " << name << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace kestrel::fuzz
