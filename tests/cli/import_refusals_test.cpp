// `gemvtune import` refusing bad documents (issue 10, items 1, 2, 7 and the import part of
// 11): every refusal exits 2 with a message naming the input file and the place in it, and
// leaves every file as it was, the cache included.
#include <sstream>

#include "cli/sandbox.hpp"

namespace gemvtune::cli_test {
namespace {

using cache_test::make_key;
using cache_test::make_record;

struct Import : Sandbox {
  // A cache holding one valid winner at 10 us, which a faster import would replace.
  std::string cache_with_winner() { return make_cache("cache.sqlite", {make_record(make_key(4096, 4096), "t128_r2_kw1_v16_u4_sk1_cs", 10.0)}); }

  // Imports `doc_text` into `db`; expects exit 2, every file unchanged, and the message to
  // name the input file and contain `expected`.
  void expect_refused(const std::string& doc_text, const std::string& db, const std::string& expected) {
    const std::string input = write_file("input.json", doc_text);
    const auto before = files();
    const CliResult r = run({"import", input, "--db", db});
    EXPECT_EQ(r.status, 2) << shown(r);
    EXPECT_TRUE(contains(r.err, input)) << "message does not name the input file: " << shown(r);
    EXPECT_TRUE(contains(r.err, expected)) << "expected '" << expected << "': " << shown(r);
    EXPECT_LT(r.err.size(), 4000u) << "message too long: " << r.err.substr(0, 300);
    EXPECT_TRUE(files() == before) << "a refused import changed files";
  }
};

// Item 1: 100000 nested arrays crashed import with SIGSEGV while building the error message.
TEST_F(Import, DeeplyNestedJsonIsRefusedNotACrash) {
  const std::string db = cache_with_winner();
  expect_refused(std::string(100000, '[') + std::string(100000, ']'), db, "nested");
  expect_refused("{\"format\": " + std::string(100000, '[') + std::string(100000, ']') + "}", db, "nested");
  // Nested where a record is expected, and then inside a record's field.
  // The text is spliced in, not dumped: nlohmann's dump recurses, and 5000 levels of it overflow
  // the stack of a test built with AddressSanitizer (its frames are larger).
  Json doc = export_of({make_record(make_key(64, 64))});
  doc["tuned"][0]["gpu"]["name"] = "DEEP";
  std::string text = doc.dump();
  const std::size_t at = text.find("\"DEEP\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 6, std::string(5000, '[') + "1" + std::string(5000, ']'));  // 5000 levels
  expect_refused(text, db, "nested");
}

// Item 2: config strings that are garbage or break the rules replaced a valid winner
// ("0 added, 1 replaced") because they were faster.
TEST_F(Import, ConfigsThatDoNotParseOrBreakTheRulesAreRefused) {
  const std::string db = cache_with_winner();
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"garbage", "not a kernel config"},
      {"t33_r1_kw1_v16_u2_sk1_cs", "breaks the config rules"},        // not a multiple of 32
      {"t128_r2_kw1_v16_u4_sk1_cs_pf", "not a kernel config"},         // pf without pdl
      {"t128_r8_kw1_v16_u8_sk1_cs", "breaks the config rules"},        // register budget
      {"t128_r2_kw1_v16_u4_sk1_cs ", "not a kernel config"},           // trailing space
      {std::string(1 << 20, 't'), "not a kernel config"},              // 1 MB
  };
  for (const auto& [config, expected] : configs) {
    SCOPED_TRACE(config.substr(0, 40));
    Json doc = export_of({make_record(make_key(4096, 4096), "t256_r2_kw2_v16_u2_sk1_cs_pdl", 1.0)});
    doc["tuned"][0]["config"] = config;  // faster than the stored winner, so it would replace it
    expect_refused(doc.dump(), db, "tuned[0]");
    expect_refused(doc.dump(), db, expected);
  }
  // A candidate that passed must be a runnable config too; a failed one only has to parse.
  Json doc = export_of({make_record(make_key(4096, 4096), "t256_r2_kw2_v16_u2_sk1_cs_pdl", 1.0)});
  doc["tuned"][0]["candidates"][1]["config"] = "t33_r1_kw1_v16_u2_sk1_cs";
  expect_refused(doc.dump(), db, "candidate 1");
  doc["tuned"][0]["candidates"][1]["config"] = "garbage";
  doc["tuned"][0]["candidates"][1]["outcome"] = "compile_failed";
  expect_refused(doc.dump(), db, "candidate 1");

  const CliResult list = run({"list", "--db", db, "--json"});
  ASSERT_EQ(list.status, 0) << shown(list);
  EXPECT_EQ(Json::parse(list.out)["tuned"][0]["config"], "t128_r2_kw1_v16_u4_sk1_cs");
}

// Item 7: the cache was opened read-write before the JSON was parsed, so a refused import
// created directories and a cache, initialised a 0-byte file, or switched a cache in
// rollback-journal mode to WAL.
TEST_F(Import, RefusedImportCreatesInitialisesAndConvertsNothing) {
  const std::string bad = "{\"format\": \"gemvtune-cache\", ";
  expect_refused(bad, dir.file("new/sub/cache.sqlite"), "malformed JSON");
  EXPECT_FALSE(std::filesystem::exists(dir.file("new")));

  const std::string empty = write_file("empty.sqlite", "");
  expect_refused(bad, empty, "malformed JSON");
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);

  const std::string journal = make_cache("journal.sqlite", {make_record(make_key(64, 64))});
  std::filesystem::remove(journal + "-wal");
  std::filesystem::remove(journal + "-shm");
  cache_test::raw_sql(journal, "PRAGMA journal_mode = DELETE");
  ASSERT_EQ(cache_test::read_bytes(journal)[18], 1) << "not in rollback-journal mode";
  expect_refused(bad, journal, "malformed JSON");
  // A valid document that breaks a rule is refused the same way.
  Json doc = export_of({make_record(make_key(64, 64))});
  doc["tuned"][0]["time_us"] = -5.0;
  expect_refused(doc.dump(), journal, "tuned[0]");
  EXPECT_EQ(cache_test::read_bytes(journal)[18], 1) << "switched to WAL";
}

// Item 11, import: invalid JSON exited 1 (other bad input exits 2), messages named the cache
// rather than the input, and `import DIR` printed "basic_filebuf::underflow error".
TEST_F(Import, MessagesNameTheInputAndExitTwo) {
  const std::string db = cache_with_winner();
  const std::string input = write_file("broken.json", "{\"format\": \"gemvtune-cache\", ");
  const CliResult broken = run({"import", input, "--db", db});
  EXPECT_EQ(broken.status, 2) << shown(broken);
  EXPECT_TRUE(contains(broken.err, "broken.json")) << shown(broken);
  EXPECT_FALSE(contains(broken.err, "cache.sqlite")) << "names the cache, which is not the problem: " << shown(broken);

  std::filesystem::create_directory(dir.file("backups"));
  const auto before = files();
  const CliResult directory = run({"import", dir.file("backups"), "--db", db});
  EXPECT_EQ(directory.status, 2) << shown(directory);
  EXPECT_TRUE(contains(directory.err, "is a directory")) << shown(directory);
  EXPECT_FALSE(contains(directory.err, "basic_filebuf")) << shown(directory);
  EXPECT_TRUE(files() == before);

  const CliResult missing = run({"import", dir.file("nope.json"), "--db", db});
  EXPECT_EQ(missing.status, 2) << shown(missing);
  EXPECT_TRUE(contains(missing.err, "nope.json")) << shown(missing);
  EXPECT_TRUE(contains(missing.err, "No such file")) << shown(missing);
}

}  // namespace
}  // namespace gemvtune::cli_test
