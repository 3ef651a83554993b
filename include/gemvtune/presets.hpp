// Lists of GEMV shapes to tune: named model presets (the decode-time linear layers of public
// LLM configs) and shape files (one NxK per line).
#pragma once
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gemvtune/shape.hpp"

namespace gemvtune {

// One weight matrix shape of a model and the layers that have it.
struct PresetShape {
  Shape shape;
  std::string layers;  // "q_proj, o_proj"
  // The GEMV just before this shape's in one decode step of the model's chain of GEMVs (fused
  // qkv, o, fused gate_up, down per layer, then lm_head, as examples/decode_chain runs them; k/v
  // after q and gate/up after o for the unfused layers): tune ranks its finalists right after a
  // call of it (TuneJob::after). Norms and attention, which sit between in a server, are not in
  // the chain. Absent for shapes outside a decode step (the families preset).
  std::optional<Shape> after;
};

struct Preset {
  std::string name;         // "llama-3.1-8b"
  std::string description;  // where the numbers come from
  std::vector<PresetShape> shapes;  // distinct shapes, in layer order
};

// Every preset, in a fixed order.
const std::vector<Preset>& presets();
// Throws InvalidArgument naming the text and listing the known presets.
const Preset& find_preset(std::string_view name);

// Shapes of a shape file: one NxK per line; blank lines and text after '#' are ignored.
// `source` names the input in errors: InvalidArgument "<source>:<line>: bad shape ...".
std::vector<Shape> parse_shape_list(std::istream& in, const std::string& source);
// Opens and parses a file; a missing or unreadable file throws InvalidArgument naming it.
std::vector<Shape> read_shape_file(const std::string& path);

}  // namespace gemvtune
