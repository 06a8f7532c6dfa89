// Subcommand registry.
#include "commands.h"

#include <map>

namespace kestrel::cli {

static std::map<CLI::App*, std::function<int()>>& runners() {
  static std::map<CLI::App*, std::function<int()>> r;
  return r;
}

CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& help, std::function<int()> run) {
  CLI::App* sub = app.add_subcommand(name, help);
  runners()[sub] = std::move(run);
  return sub;
}

void register_all(CLI::App& app) {
  register_train(app);
  register_val(app);
  register_detect(app);
  register_doctor(app);
  register_bench(app);
  register_profile(app);
  register_scan(app);
  register_pack(app);
  register_prune(app);
  register_export(app);
  register_tune(app);
}

int run_selected(CLI::App& app) {
  (void)app;
  for (auto& [sub, run] : runners())
    if (sub->parsed()) return run();
  return 2;
}

}  // namespace kestrel::cli
