// libFuzzer target: a shape file (`tune --shapes FILE`). parse_shape_list either refuses with
// InvalidArgument or gives shapes that are all within 1..kMaxDim and print back to text that
// parses to the same shapes. Anything else is a finding.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "gemvtune/error.hpp"
#include "gemvtune/presets.hpp"
#include "gemvtune/shape.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gemvtune;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<Shape> shapes;
  try {
    shapes = parse_shape_list(in, "fuzz");
  } catch (const InvalidArgument&) {
    return 0;
  }
  if (shapes.empty()) return 0;
  std::string text;
  for (const Shape& s : shapes) {
    check_shape(s);  // must not throw
    text += to_string(s) + "\n";
  }
  std::istringstream again(text);
  if (parse_shape_list(again, "again") != shapes) std::abort();
  return 0;
}
