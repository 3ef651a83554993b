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
  const Shape q_proj{q, d.hidden}, qkv{q + 2 * kv, d.hidden}, o_proj{d.hidden, q}, down{d.hidden, d.intermediate};
  // The call before each in a decode step: the fused chain (qkv, o, gate_up, down, then the next
  // layer's qkv; lm_head after the last down), and the unfused layers in their own order.
  struct Layer {
    PresetShape shape;
    bool fused_chain;  // one of examples/decode_chain's GEMVs
  };
  const std::vector<Layer> out = {
      {{q_proj, "q_proj", down}, false},
      {{{kv, d.hidden}, "k_proj, v_proj", q_proj}, false},
      {{qkv, "qkv_proj (fused)", down}, true},
      {{o_proj, "o_proj", qkv}, true},
      {{{d.intermediate, d.hidden}, "gate_proj, up_proj", o_proj}, false},
      {{{2 * d.intermediate, d.hidden}, "gate_up_proj (fused)", o_proj}, true},
      {{down, "down_proj", Shape{2 * d.intermediate, d.hidden}}, true},
      {{{d.vocab, d.hidden}, "lm_head", down}, true},
  };
  // Layers of one shape (q and o when heads * head_dim == hidden) are tuned once, after the call
  // before the fused chain's layer where one of them is in it.
  std::vector<PresetShape> merged;
  std::vector<bool> chain;
  for (const Layer& l : out) {
    const PresetShape& s = l.shape;
    auto same = std::find_if(merged.begin(), merged.end(), [&](const PresetShape& m) { return m.shape == s.shape; });
    if (same == merged.end()) {
      merged.push_back(s);
      chain.push_back(l.fused_chain);
      continue;
    }
    same->layers += ", " + s.layers;
    const std::size_t i = static_cast<std::size_t>(same - merged.begin());
    if (l.fused_chain && !chain[i]) {
      same->after = s.after;
      chain[i] = true;
    }
  }
  return merged;
}

// Shapes a server meets beyond the Llama presets, M = 1, valid for every dtype (K not a multiple
// of 8 runs the aligned-body `_al` variants).
std::vector<PresetShape> family_sweep_shapes() {
  struct Named {
    Shape shape;
    const char* layers;
  };
  const Named named[] = {
      // Qwen2.5-7B: hidden 3584, 28 heads and 4 KV heads of 128, MLP 18944.
      {{4608, 3584}, "Qwen2.5-7B qkv_proj (fused)"},
      {{512, 3584}, "Qwen2.5-7B k_proj, v_proj"},
      {{3584, 18944}, "Qwen2.5-7B down_proj"},
      // Llama-2-7B: hidden 4096, MLP 11008, vocab 32000 (Mistral-7B v0.1's vocab too).
      {{11008, 4096}, "Llama-2-7B gate_proj, up_proj"},
      {{4096, 11008}, "Llama-2-7B down_proj"},
      {{32000, 4096}, "Llama-2-7B, Mistral-7B-v0.1 lm_head"},
      // Llama-3.1-70B split 8 ways (tensor parallel): 1024 q + 128 k + 128 v rows, MLP 28672 / 8.
      {{1280, 8192}, "Llama-3.1-70B TP8 qkv_proj slice"},
      {{8192, 1024}, "Llama-3.1-70B TP8 o_proj slice"},
      {{7168, 8192}, "Llama-3.1-70B TP8 gate_up_proj slice"},
      {{8192, 3584}, "Llama-3.1-70B TP8 down_proj slice"},
      // Tails: few rows with a long K, K not a multiple of 8, odd N, tiny N.
      {{32, 8192}, "synthetic: few rows, long K"},
      {{4096, 4093}, "synthetic: K = 5 (mod 8)"},
      {{4097, 4099}, "synthetic: N odd, K = 3 (mod 8)"},
      {{50257, 768}, "GPT-2 lm_head (vocab 50257, hidden 768)"},
      {{3, 4096}, "synthetic: 3 rows"},
      {{256, 2048}, "TinyLlama-1.1B k_proj, v_proj (4 KV heads of 64)"},
      // Gemma-2-9B: hidden 3584, 16 heads of 256 (q 4096), MLP 14336, vocab 256000.
      {{14336, 3584}, "Gemma-2-9B gate_proj, up_proj"},
      {{3584, 4096}, "Gemma-2-9B o_proj"},
      {{256000, 3584}, "Gemma-2-9B lm_head"},
      // Phi-3-mini: hidden 3072, 32 heads of 96 (fused qkv 3 x 3072), MLP 8192.
      {{9216, 3072}, "Phi-3-mini qkv_proj (fused)"},
      {{3072, 8192}, "Phi-3-mini down_proj"},
      // More tails.
      {{16, 14336}, "synthetic: few rows, long K"},
      {{8, 4096}, "Mixtral-8x7B router (8 experts, hidden 4096)"},
      {{11008, 4095}, "synthetic: Llama-2-7B gate with K = 7 (mod 8)"},
      {{128, 896}, "Qwen2.5-0.5B k_proj, v_proj (2 KV heads of 64)"},
  };
  std::vector<PresetShape> out;
  for (const Named& n : named) out.push_back(PresetShape{n.shape, n.layers, std::nullopt});  // not one decode step
  return out;
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
      {"families",
       "a sweep over other model families and tails at M = 1 (real dimensions from each model's config.json, "
       "tensor-parallel slices, odd K and N, few-row long K, shapes of 1 MiB and less); the first 16 are the "
       "tune-time subset of scripts/gpu_session.sh familysweep",
       family_sweep_shapes()},
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
    // A UTF-8 byte order mark, as some Windows editors write (they write CRLF too, taken below).
    if (number == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
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
