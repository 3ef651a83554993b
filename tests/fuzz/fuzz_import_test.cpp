// Fixed-seed fuzz of what `import` reads (issue 10's Done-when): random JSON, mutations of a
// valid export (values of every type swapped in, fields dropped or added, configs from
// garbage to a megabyte), byte-level damage (flips, invalid UTF-8, truncation, splices) and
// deep nesting up to 100000 levels. Every input must be either accepted (and then import,
// export and re-read cleanly, with no unusable row) or refused with InvalidArgument whose
// short message names the source; a refused import leaves the cache's files as they were.
// A crash fails the test by killing it.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cache/cache_test_util.hpp"
#include "fuzz/fuzz_support.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::fuzz {
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kKeys = {
    "format", "format_version", "tuned", "peaks", "gpu", "name", "sm_count", "cc_major", "cc_minor", "n", "k",
    "dtype", "batch", "template_version", "config", "time_us", "gbps", "pct_of_ceiling", "strategy",
    "driver_version", "nvrtc_version", "timestamp", "candidates", "outcome", "reason", "bytes", "x", ""};

const std::vector<std::string> kStrings = {
    "", "gemvtune-cache", "bf16", "fp16", "fp32", "int4", "passed", "incorrect", "compile_failed", "great",
    "t128_r2_kw1_v16_u4_sk1_cs", "t256_r2_kw2_v16_u2_sk1_cs_pdl_pf", "t33_r1_kw1_v16_u2_sk1_cs",
    "t128_r2_kw1_v16_u4_sk1_cs_pf", "t128_r8_kw1_v16_u8_sk1_cs", "t0128_r2_kw1_v16_u4_sk1_cs", "garbage",
    "NVIDIA H200", "tpl-1", "model", "\xc3\xbc", "\u2603", std::string("nul\0inside", 10), "\x01\x1f",
    std::string(70, 'a'), std::string(5000, 't')};

const std::vector<double> kDoubles = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, 1.7976931348623157e308,
                                       -5.0, 3.14159, 4096.0, 1e16, 9007199254740993.0};

const std::vector<std::int64_t> kInts = {0, 1, -1, 2, 9, 10, 132, 4096, 2147483647, 2147483648LL, -2147483649LL,
                                         9223372036854775807LL, -9223372036854775807LL - 1, 1LL << 40};

Json random_json(Rng& rng, int depth) {
  switch (below(rng, depth > 0 ? 9 : 6)) {
    case 0: return nullptr;
    case 1: return chance(rng, 0.5);
    case 2: return pick(rng, kInts);
    case 3: return pick(rng, kDoubles);
    case 4: return std::uint64_t{18446744073709551615ULL};
    case 5: return pick(rng, kStrings);
    case 6:
    case 7: {
      Json a = Json::array();
      for (std::size_t i = below(rng, 5); i > 0; --i) a.push_back(random_json(rng, depth - 1));
      return a;
    }
    default: {
      Json o = Json::object();
      for (std::size_t i = below(rng, 6); i > 0; --i) o[pick(rng, kKeys)] = random_json(rng, depth - 1);
      return o;
    }
  }
}

// A valid export with two winners (one with candidates) and a peak.
Json base_document() {
  cache_test::TempDir dir;
  TuningCache cache(dir.file("c.sqlite"), CacheMode::read_write);
  cache.store(cache_test::make_record(cache_test::make_key(4096, 4096)));
  TuneRecord bare = cache_test::make_record(cache_test::make_key(1024, 14336, cache_test::h200(), DType::f16, 4));
  bare.candidates.clear();
  cache.store(bare);
  cache.store_peak(PeakRecord{cache_test::h200(), 4800.0, 1 << 30, 13000, 1764417600});
  std::ostringstream text;
  cache.export_json(text);
  return Json::parse(text.str());
}

// The i-th element or field of an array or object (object iterators take no offsets).
Json::iterator nth(Json& j, std::size_t i) {
  auto it = j.begin();
  while (i-- > 0) ++it;
  return it;
}

// A random node of `j` (the root included), walking down at random.
Json* random_node(Rng& rng, Json& j) {
  Json* node = &j;
  while ((node->is_array() || node->is_object()) && !node->empty() && chance(rng, 0.75))
    node = &*nth(*node, below(rng, node->size()));
  return node;
}

std::string structural_mutation(Rng& rng, Json doc) {
  for (std::size_t edits = 1 + below(rng, 3); edits > 0; --edits) {
    Json* node = random_node(rng, doc);
    switch (below(rng, 6)) {
      case 0: *node = random_json(rng, 3); break;
      case 1:
        if (node->is_object() && !node->empty()) node->erase(nth(*node, below(rng, node->size())));
        break;
      case 2:
        if (node->is_object()) (*node)[pick(rng, kKeys)] = random_json(rng, 2);
        break;
      case 3:
        if (node->is_array() && !node->empty()) node->push_back((*node)[below(rng, node->size())]);
        break;
      case 4: *node = pick(rng, kStrings); break;
      default: *node = chance(rng, 0.5) ? Json(pick(rng, kDoubles)) : Json(pick(rng, kInts)); break;
    }
  }
  return doc.dump(chance(rng, 0.5) ? 2 : -1);
}

std::string byte_mutation(Rng& rng, std::string text) {
  for (std::size_t edits = 1 + below(rng, 4); edits > 0 && !text.empty(); --edits) {
    const std::size_t at = below(rng, text.size());
    switch (below(rng, 6)) {
      case 0: text[at] = static_cast<char>(below(rng, 256)); break;
      case 1: text.insert(at, 1, static_cast<char>(0x80 + below(rng, 128))); break;  // stray UTF-8
      case 2: text.erase(at, 1 + below(rng, 40)); break;
      case 3: text.resize(at); break;
      case 4: text.insert(at, text.substr(below(rng, text.size()), below(rng, 200))); break;
      default: text.insert(at, std::string(1 + below(rng, 40), "[{\"]},:0"[below(rng, 8)])); break;
    }
  }
  return text;
}

std::string deep_nesting(Rng& rng) {
  const std::vector<std::size_t> depths = {15, 16, 17, 100, 1000, 100000};
  const std::size_t depth = pick(rng, depths);
  const std::string open = chance(rng, 0.5) ? "[" : "{\"tuned\":";
  const std::string close = open == "[" ? "]" : "}";
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += open;
  text += "1";
  if (chance(rng, 0.8))
    for (std::size_t i = 0; i < depth; ++i) text += close;
  if (chance(rng, 0.3)) text = "{\"format\":\"gemvtune-cache\",\"format_version\":1,\"peaks\":[],\"tuned\":" + text + "}";
  return text;
}

TEST(FuzzImport, EveryInputIsReadOrRefusedCleanly) {
  Rng rng(seed());
  cache_test::TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  TuningCache cache(path, CacheMode::read_write);
  cache.store(cache_test::make_record(cache_test::make_key(64, 64)));
  const Json base = base_document();
  const std::string base_text = base.dump(2);

  int accepted = 0, refused = 0;
  const auto started = std::chrono::steady_clock::now();
  const int iterations = scaled(30000);
  int i = 0;
  for (; i < iterations; ++i) {
    std::string input;
    const std::size_t kind = below(rng, 20);
    if (kind < 10) input = structural_mutation(rng, base);
    else if (kind < 16) input = byte_mutation(rng, chance(rng, 0.5) ? base_text : structural_mutation(rng, base));
    else if (kind < 18) input = random_json(rng, 5).dump();
    else input = deep_nesting(rng);

    std::istringstream in(input);
    try {
      const CacheDocument doc = read_cache_json(in, "fuzz.json");
      ++accepted;
      // Accepted means importable: nothing store() would refuse got through.
      const TuningCache::ImportStats stats = cache.import_document(doc);
      EXPECT_EQ(static_cast<std::size_t>(stats.added + stats.replaced + stats.kept), doc.tuned.size());
    } catch (const InvalidArgument& e) {
      ++refused;
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("fuzz.json: ", 0), 0u) << message << "\ninput: " << preview(input);
      EXPECT_LT(message.size(), 2000u) << preview(message) << "\ninput: " << preview(input);
      if (i % 25 == 0) {  // and through the cache: a refused import changes no file
        const auto before = cache_test::snapshot(dir.path());
        std::istringstream again(input);
        EXPECT_THROW(cache.import_json(again, "fuzz.json"), InvalidArgument) << preview(input);
        EXPECT_TRUE(cache_test::snapshot(dir.path()) == before) << preview(input);
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an InvalidArgument: " << e.what() << "\ninput: " << preview(input);
    }
    if (::testing::Test::HasFailure()) break;  // the first finding, not a thousand
  }
  // Whatever went in comes out again as a document that reads back.
  EXPECT_TRUE(cache.problems().empty());
  std::ostringstream exported;
  cache.export_json(exported);
  std::istringstream back(exported.str());
  EXPECT_NO_THROW(read_cache_json(back, "export"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "seed " << seed() << ": " << i << " inputs, " << accepted << " accepted, " << refused
            << " refused, " << cache.list().size() << " entries imported, " << seconds << " s\n";
  EXPECT_GT(accepted, 0) << "the mutations never produced a valid document: the fuzz tests too little";
  EXPECT_GT(refused, i / 2);
}

}  // namespace
}  // namespace gemvtune::fuzz
