// torchrun's environment, read and checked.
#include "distributed/world.h"

#include <cstdlib>
#include <stdexcept>

namespace kestrel {

namespace {

int read_int(const EnvLookup& env, const char* name, int fallback) {
  const char* v = env(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end || x < 0 || x > 1 << 30)
    throw std::runtime_error(std::string("environment variable ") + name + "='" + v + "' is not a non-negative integer");
  return static_cast<int>(x);
}

}  // namespace

World world_from_env(const EnvLookup& env) {
  World w;
  w.size = read_int(env, "WORLD_SIZE", 1);
  w.rank = read_int(env, "RANK", 0);
  w.local_rank = read_int(env, "LOCAL_RANK", w.rank);
  w.local_size = read_int(env, "LOCAL_WORLD_SIZE", w.size);
  w.node_rank = read_int(env, "GROUP_RANK", w.local_size ? w.rank / w.local_size : 0);
  w.master_port = read_int(env, "MASTER_PORT", w.master_port);
  w.restart_count = read_int(env, "TORCHELASTIC_RESTART_COUNT", 0);
  if (const char* a = env("MASTER_ADDR"); a && *a) w.master_addr = a;
  if (const char* s = env("TORCHELASTIC_USE_AGENT_STORE")) w.agent_store = std::string(s) == "True" || std::string(s) == "1";
  if (w.size < 1) throw std::runtime_error("WORLD_SIZE=0: a job needs at least one process");
  if (w.rank >= w.size)
    throw std::runtime_error("RANK=" + std::to_string(w.rank) + " is not below WORLD_SIZE=" + std::to_string(w.size));
  if (w.local_size < 1 || w.local_rank >= w.local_size || w.local_size > w.size)
    throw std::runtime_error("LOCAL_RANK=" + std::to_string(w.local_rank) + " / LOCAL_WORLD_SIZE=" +
                             std::to_string(w.local_size) + " do not fit WORLD_SIZE=" + std::to_string(w.size));
  if (w.master_port < 1 || w.master_port > 65535)
    throw std::runtime_error("MASTER_PORT=" + std::to_string(w.master_port) + " is not a TCP port");
  return w;
}

World world_from_env() { return world_from_env([](const char* name) { return std::getenv(name); }); }

}  // namespace kestrel
