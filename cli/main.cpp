// kestrel: command-line front end. Parses flags and calls the library; no logic of its own.
// Subcommands live in cli/cmd_*.cpp and register themselves through cli/commands.h.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "commands.h"
#include "core/heap_reuse.h"

// LibTorch's OpenMP threads spin while waiting, stealing the cores the loader threads need. The
// policy is read when libgomp loads, before main, so set it and re-execute once.
static void ensure_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", argv);
  // If re-exec fails we carry on: slower under contention, still correct.
}

// LibTorch's errors (c10::Error) carry a C++ backtrace in what(), also when another error's message
// quotes them: the user gets the message alone, the trace only with KESTREL_DEBUG=1.
static std::string user_message(std::string what) {
  const char* debug = std::getenv("KESTREL_DEBUG");
  if (debug && *debug && std::string(debug) != "0") return what;
  const size_t trace = what.find("Exception raised from ");
  if (trace != std::string::npos) what.erase(trace);
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  return what;
}

int main(int argc, char** argv) {
  ensure_passive_openmp(argv);
  // Line by line also into a file or pipe (schedulers and CI send stdout and stderr to one log): a
  // block-buffered stdout would put an error or warning on stderr before the lines that preceded it.
  std::setvbuf(stdout, nullptr, _IOLBF, 1 << 16);
  if (!std::getenv("KESTREL_NO_HEAP_REUSE")) kestrel::keep_freed_memory();  // before the first tensor
  CLI::App app{"Kestrel: fast YOLO training in C++. Run `kestrel <command> --help` for a command's flags."};
  app.require_subcommand(1);
  kestrel::cli::register_all(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return kestrel::cli::run_selected(app);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kestrel: error: %s\n", user_message(e.what()).c_str());
    return 1;
  }
}
