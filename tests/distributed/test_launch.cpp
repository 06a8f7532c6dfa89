// torchrun's environment (dist/world.h) and the self-launcher's side of it (dist/launch.h).
#include <gtest/gtest.h>

#include <map>

#include "distributed/launch.h"
#include "distributed/world.h"

namespace kestrel {
namespace {

World world_of(const std::map<std::string, std::string>& env) {
  return world_from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(World, NoVariablesIsOneProcess) {
  const World w = world_of({});
  EXPECT_FALSE(w.distributed());
  EXPECT_TRUE(w.main());
  EXPECT_EQ(w.size, 1);
}

TEST(World, ReadsTorchrunsVariables) {
  const World w = world_of({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"},
                            {"GROUP_RANK", "1"}, {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29511"},
                            {"TORCHELASTIC_RESTART_COUNT", "2"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.size, 4);
  EXPECT_EQ(w.local_size, 2);
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.master_addr, "10.0.0.5");
  EXPECT_EQ(w.master_port, 29511);
  EXPECT_EQ(w.restart_count, 2);
  EXPECT_TRUE(w.agent_store);
  EXPECT_FALSE(w.main());
}

TEST(World, InconsistentVariablesNameTheVariable) {
  auto message = [](const std::map<std::string, std::string>& env) {
    try {
      world_of(env);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK=2"), std::string::npos);
  EXPECT_NE(message({{"WORLD_SIZE", "two"}}).find("WORLD_SIZE='two'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}).find("MASTER_PORT"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}).find("LOCAL_RANK"),
            std::string::npos);
}

TEST(Launch, RankEnvironmentOfASecondNode) {
  LaunchOptions o;
  o.nproc_per_node = 2, o.nnodes = 2, o.node_rank = 1, o.master_addr = "node0", o.master_port = 29600;
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : rank_environment(o, 1)) env[k] = v;
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "node0");
  EXPECT_EQ(env["MASTER_PORT"], "29600");
  // What the launcher sets, the ranks read back.
  const World w = world_of(env);
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.node_rank, 1);
}

TEST(Launch, DeviceListGivesOneDevicePerProcess) {
  EXPECT_EQ(device_list_size("cpu"), 1);
  EXPECT_EQ(device_list_size("0"), 1);
  EXPECT_EQ(device_list_size("0,1,2,3"), 4);
  EXPECT_EQ(rank_device("0,1,2,3", 0), "0");
  EXPECT_EQ(rank_device("0,1,2,3", 2), "2");
  EXPECT_EQ(rank_device("cuda:1", 3), "cuda:1");
  EXPECT_THROW(rank_device("0,1", 2), std::runtime_error);
}

TEST(Launch, ChecksItsFlags) {
  LaunchOptions o;
  o.nnodes = 2, o.node_rank = 2;
  EXPECT_THROW(check_launch_options(o), std::runtime_error);
  o.node_rank = 1, o.master_port = 0;
  EXPECT_THROW(check_launch_options(o), std::runtime_error);
  o.master_port = 29500;
  EXPECT_NO_THROW(check_launch_options(o));
}

}  // namespace
}  // namespace kestrel
