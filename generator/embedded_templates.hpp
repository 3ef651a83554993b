// The kernel templates of templates/, embedded into the library at build time by
// cmake/embed_templates.cmake, so the binary needs no files beside it.
#pragma once
#include <cstddef>
#include <string_view>

namespace gemvtune::templates {

struct EmbeddedFile {
  std::string_view name;  // file name within templates/, e.g. "gemv.cu"
  std::string_view text;
};
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;

// Text of templates/<name>; throws gemvtune::Error if the build embedded no such file.
std::string_view get(std::string_view name);

}  // namespace gemvtune::templates
