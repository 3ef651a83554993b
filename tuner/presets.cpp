// Model presets (from the models' public config.json) and the shape-file parser.
//
// For a decoder layer with hidden size H, A attention heads and G key/value heads of size D,
// intermediate size I and vocabulary V, the decode GEMVs (N x K = out x in) are:
// q/o H x H, k/v G*D x H, fused qkv (A+2G)*D x H, gate/up I x H, fused gate_up 2I x H,
// down H x I and lm_head V x H.
#include <algorithm>
#include <fstream>

#include "gemvtune/error.hpp"
#include "gemvtune/presets.hpp"

namespace gemvtune {

namespace {
struct Dims {
  std::int64_t hidden, heads, kv_heads, head_dim, intermediate, vocab;
};

std::vector<PresetShape> decoder_shapes(const Dims& d) {
  const std::int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  std::vector<PresetShape> out = {
      {{q, d.hidden}, "q_proj"},
      {{kv, d.hidden}, "k_proj, v_proj"},
      {{q + 2 * kv, d.hidden}, "qkv_proj (fused)"},
      {{d.hidden, q}, "o_proj"},
      {{d.intermediate, d.hidden}, "gate_proj, up_proj"},
      {{2 * d.intermediate, d.hidden}, "gate_up_proj (fused)"},
      {{d.hidden, d.intermediate}, "down_proj"},
      {{d.vocab, d.hidden}, "lm_head"},
  };
  // Layers of one shape (q and o when heads * head_dim == hidden) are tuned once.
  std::vector<PresetShape> merged;
  for (const PresetShape& s : out) {
    auto same = std::find_if(merged.begin(), merged.end(), [&](const PresetShape& m) { return m.shape == s.shape; });
    if (same == merged.end()) merged.push_back(s);
    else same->layers += ", " + s.layers;
  }
  return merged;
}
}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"llama-3.1-8b", "Llama 3.1 8B: hidden 4096, 32 heads, 8 KV heads of 128, MLP 14336, vocab 128256",
       decoder_shapes({4096, 32, 8, 128, 14336, 128256})},
      {"llama-3.1-70b", "Llama 3.1 70B: hidden 8192, 64 heads, 8 KV heads of 128, MLP 28672, vocab 128256",
       decoder_shapes({8192, 64, 8, 128, 28672, 128256})},
      {"qwen2.5-7b", "Qwen2.5 7B: hidden 3584, 28 heads, 4 KV heads of 128, MLP 18944, vocab 152064",
       decoder_shapes({3584, 28, 4, 128, 18944, 152064})},
  };
  return all;
}

const Preset& find_preset(std::string_view name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InvalidArgument("unknown preset '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<Shape> parse_shape_list(std::istream& in, const std::string& source) {
  std::vector<Shape> shapes;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto last = line.find_last_not_of(" \t\r");
    try {
      shapes.push_back(parse_shape(std::string_view(line).substr(first, last - first + 1)));
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(source + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  if (in.bad()) throw InvalidArgument("cannot read " + source);
  return shapes;
}

std::vector<Shape> read_shape_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot open shape file '" + path + "'");
  return parse_shape_list(in, path);
}

}  // namespace gemvtune
