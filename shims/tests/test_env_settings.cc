// Environment switches (shims/common/env.h): AOTIRT_GEMM_TUNE, AOTIRT_GEMM_GRAPHS and torch's workspace flags use
// them. Off words in either case, anything else on, the default when unset; an in-process override wins until reset.
#include <gtest/gtest.h>

#include <cstdlib>

#include "shims/common/env.h"

namespace {

TEST(EnvFlag, UnsetGivesTheDefault) {
  unsetenv("AOTIRT_TEST_FLAG");
  EXPECT_TRUE(aotirt::EnvFlag("AOTIRT_TEST_FLAG", true));
  EXPECT_FALSE(aotirt::EnvFlag("AOTIRT_TEST_FLAG", false));
}

TEST(EnvFlag, OffWordsAndOthers) {
  for (const char* off : {"0", "off", "OFF", "no", "NO", "false", "FALSE", "n", "N"}) {
    setenv("AOTIRT_TEST_FLAG", off, 1);
    EXPECT_FALSE(aotirt::EnvFlag("AOTIRT_TEST_FLAG", true)) << off;
  }
  for (const char* on : {"1", "on", "yes", "true", "anything", ""}) {
    setenv("AOTIRT_TEST_FLAG", on, 1);
    EXPECT_TRUE(aotirt::EnvFlag("AOTIRT_TEST_FLAG", false)) << on;
  }
  unsetenv("AOTIRT_TEST_FLAG");
}

TEST(EnvSwitch, AnOffByDefaultSwitchNeedsTheEnvironmentOrAnOverride) {
  unsetenv("AOTIRT_TEST_SWITCH_OFF");
  aotirt::EnvSwitch off("AOTIRT_TEST_SWITCH_OFF", /*default_on=*/false);
  EXPECT_FALSE(off.On());
  off.Set(1);
  EXPECT_TRUE(off.On());
  setenv("AOTIRT_TEST_SWITCH_OFF", "1", 1);
  off.Set(-1);
  EXPECT_TRUE(off.On());
  unsetenv("AOTIRT_TEST_SWITCH_OFF");
  aotirt::EnvSwitch on_default("AOTIRT_TEST_SWITCH_OFF");
  EXPECT_TRUE(on_default.On());
}

TEST(EnvSwitch, ReadsTheEnvironmentOnceAndOverridesWin) {
  setenv("AOTIRT_TEST_SWITCH", "0", 1);
  aotirt::EnvSwitch s("AOTIRT_TEST_SWITCH");
  EXPECT_FALSE(s.On());
  setenv("AOTIRT_TEST_SWITCH", "1", 1);
  EXPECT_FALSE(s.On());  // read once
  s.Set(1);
  EXPECT_TRUE(s.On());
  s.Set(0);
  EXPECT_FALSE(s.On());
  s.Set(-1);  // back to the environment, read again
  EXPECT_TRUE(s.On());
  unsetenv("AOTIRT_TEST_SWITCH");
}

}  // namespace
