// Subcommand registry of the kestrel front end: each cmd_*.cpp adds its CLI11 subcommand and the
// function that runs it.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace kestrel::cli {

// Registers a subcommand; `run` is called when it is the one selected.
CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& help, std::function<int()> run);
void register_all(CLI::App& app);
int run_selected(CLI::App& app);

void register_train(CLI::App& app);
void register_val(CLI::App& app);
void register_detect(CLI::App& app);
void register_doctor(CLI::App& app);
void register_bench(CLI::App& app);
void register_profile(CLI::App& app);
void register_scan(CLI::App& app);
void register_pack(CLI::App& app);
void register_prune(CLI::App& app);
void register_export(CLI::App& app);
void register_tune(CLI::App& app);

}  // namespace kestrel::cli
