// The cache path and the smaller messages of the cache commands (issue 10, items 6, 8, 9 and
// the rest of 11): `--db ''`, a FIFO or a device as the cache, `--db file:...`, a 0-byte
// cache, dates past the year 9999, `--gpu` identities no GPU has, a 100 KB config to `emit`.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli/sandbox.hpp"

namespace gemvtune::cli_test {
namespace {

namespace fs = std::filesystem;
using cache_test::make_key;
using cache_test::make_record;

const char* const kH200 = "NVIDIA H200/132sm/cc9.0";

// Item 6: `--db ''` (an unset shell variable) silently meant the default cache.
TEST_F(Sandbox, AnEmptyDbIsAUsageErrorAndTheDefaultCacheIsNotTouched) {
  const std::string doc = write_file("doc.json", export_of({make_record(make_key(64, 64))}).dump());
  const auto before = files();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"list", "--db", ""}, {"export", "--db", ""}, {"import", doc, "--db", ""},
        {"query", "--shape", "64x64", "--gpu", kH200, "--db", ""}, {"list", "--db="}}) {
    SCOPED_TRACE(args[0]);
    const CliResult r = run(args);
    EXPECT_EQ(r.status, 2) << shown(r);
    EXPECT_TRUE(contains(r.err, "--db")) << shown(r);  // "--db is empty", or boost's for --db=
  }
  EXPECT_TRUE(files() == before);
  EXPECT_FALSE(fs::exists(dir.file("default-cache.sqlite")));
}

// Item 8: a FIFO as the cache hung `list` and `import`; a device got a -journal beside it.
TEST_F(Sandbox, AFifoOrADeviceAsTheCacheIsRefusedAtOnce) {
  const std::string doc = write_file("doc.json", export_of({make_record(make_key(64, 64))}).dump());
  const std::string fifo = dir.file("cache.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const bool root_made_device = ::mknod(dir.file("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
  const auto before = files();
  std::vector<std::pair<std::string, std::string>> targets = {{fifo, "is a FIFO"}};
  if (root_made_device) targets.emplace_back(dir.file("null"), "is a character device");
  for (const auto& [db, expected] : targets) {
    for (const std::vector<std::string>& args : {std::vector<std::string>{"list", "--db", db}, {"import", doc, "--db", db},
                                                 {"export", "--db", db}}) {
      SCOPED_TRACE(args[0] + " " + db);
      const CliResult r = run(args, "", 10);
      EXPECT_EQ(r.status, 1) << "status 142 means it hung: " << shown(r);
      EXPECT_TRUE(contains(r.err, expected)) << shown(r);
      EXPECT_TRUE(contains(r.err, "not a regular file")) << shown(r);
    }
  }
  EXPECT_TRUE(files() == before) << "a -journal or another file appeared";
  const bool journal_before = fs::exists("/dev/null-journal");
  const CliResult dev_null = run({"list", "--db", "/dev/null"}, "", 10);
  EXPECT_EQ(dev_null.status, 1) << shown(dev_null);
  if (!journal_before) {
    EXPECT_FALSE(fs::exists("/dev/null-journal"));
  }
}

// Item 9: `--db file:p.sqlite` was read as an SQLite URI: import wrote p.sqlite while list
// read a file named file:p.sqlite. Both now use the file named exactly as given.
TEST_F(Sandbox, AFileColonPathIsAPlainFileName) {
  const std::string doc = write_file("doc.json", export_of({make_record(make_key(64, 64))}).dump());
  const CliResult import = run({"import", doc, "--db", "file:p.sqlite"}, dir.path());
  ASSERT_EQ(import.status, 0) << shown(import);
  EXPECT_TRUE(fs::exists(dir.file("file:p.sqlite")));
  EXPECT_FALSE(fs::exists(dir.file("p.sqlite")));
  const CliResult list = run({"list", "--db", "file:p.sqlite", "--json"}, dir.path());
  ASSERT_EQ(list.status, 0) << shown(list);
  EXPECT_EQ(Json::parse(list.out)["tuned"].size(), 1u) << list.out;
  const CliResult memory = run({"import", doc, "--db", ":memory:"}, dir.path());
  ASSERT_EQ(memory.status, 0) << shown(memory);
  EXPECT_TRUE(fs::exists(dir.file(":memory:"))) << "imported into an in-memory database";
}

// Item 11: a 0-byte cache told the user to "open it read_write once", which no command does.
TEST_F(Sandbox, AZeroByteCacheSaysNothingIsStoredInIt) {
  const std::string empty = write_file("empty.sqlite", "");
  const CliResult r = run({"list", "--db", empty});
  EXPECT_EQ(r.status, 1) << shown(r);
  EXPECT_TRUE(contains(r.err, "nothing has been stored in it")) << shown(r);
  EXPECT_FALSE(contains(r.err, "read_write")) << shown(r);
  EXPECT_EQ(fs::file_size(empty), 0u);
}

// Item 11: a timestamp in the year 109626219 printed as "109626219-01-00".
TEST_F(Sandbox, DatesBeyondTheYear9999PrintAsUnixTime) {
  TuneRecord r = make_record(make_key(64, 64));
  r.timestamp = 3459429089011200;
  const std::string db = make_cache("cache.sqlite", {r});
  const CliResult list = run({"list", "--db", db});
  ASSERT_EQ(list.status, 0) << shown(list);
  EXPECT_TRUE(contains(list.out, "unix time 3459429089011200")) << shown(list);
  EXPECT_FALSE(contains(list.out, "-01-00")) << shown(list);
}

// Item 11: `--gpu 'A/1sm/cc-1.0'` was accepted; the cache's own GPU rules now apply.
TEST_F(Sandbox, GpuIdentitiesNoGpuHasAreUsageErrors) {
  for (const char* gpu : {"A/1sm/cc-1.0", "A/0sm/cc9.0", "A/-3sm/cc9.0", "A/1sm/cc0.0", "A/1sm/cc9.10", "/1sm/cc9.0"}) {
    SCOPED_TRACE(gpu);
    const CliResult r = run({"query", "--shape", "4096x4096", "--gpu", gpu, "--db", dir.file("none.sqlite")});
    EXPECT_EQ(r.status, 2) << shown(r);
    EXPECT_TRUE(contains(r.err, "bad --gpu")) << shown(r);
  }
  const CliResult ok = run({"query", "--shape", "4096x4096", "--gpu", "A/1sm/cc9.0", "--db", dir.file("none.sqlite")});
  EXPECT_EQ(ok.status, 0) << shown(ok);
}

// Item 11: `emit` echoed a 100 KB config twice.
TEST_F(Sandbox, EmitKeepsMessagesAboutHugeConfigsShort) {
  for (const std::string& config : {"t" + std::string(100000, '1') + "_r1_kw1_v16_u2_sk1_cs", std::string(100000, 'x')}) {
    const CliResult r = run({"emit", config});
    EXPECT_EQ(r.status, 2) << shown(r);
    EXPECT_TRUE(contains(r.err, "bad config")) << shown(r);
    EXPECT_LT(r.err.size(), 1500u) << r.err.substr(0, 300);
  }
}

}  // namespace
}  // namespace gemvtune::cli_test
