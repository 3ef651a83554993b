// default_path(): $GEMVTUNE_CACHE, else $XDG_CACHE_HOME/gemvtune/..., else $HOME/.cache/...
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "gemvtune/cache.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

// Sets or unsets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CacheDefaultPath, ExplicitVariableWins) {
  ScopedEnv cache("GEMVTUNE_CACHE", "/data/tune.sqlite");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(TuningCache::default_path(), "/data/tune.sqlite");
}

TEST(CacheDefaultPath, XdgCacheHomeThenHome) {
  ScopedEnv cache("GEMVTUNE_CACHE", nullptr);
  ScopedEnv home("HOME", "/home/user");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(TuningCache::default_path(), "/xdg/gemvtune/gemvtune.sqlite");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/is/ignored");
    EXPECT_EQ(TuningCache::default_path(), "/home/user/.cache/gemvtune/gemvtune.sqlite");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(TuningCache::default_path(), "/home/user/.cache/gemvtune/gemvtune.sqlite");
}

TEST(CacheDefaultPath, NothingSetIsAnError) {
  ScopedEnv cache("GEMVTUNE_CACHE", "");
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", nullptr);
  EXPECT_THROW(TuningCache::default_path(), CacheError);
}

}  // namespace
}  // namespace gemvtune
