// Text checks and shortening shared by the cache's validation and error messages: every
// string the cache stores must survive a JSON export (valid UTF-8), and a message must stay
// readable when the input that caused it is a megabyte long.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace gemvtune::cache {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF), which is what nlohmann::json needs to write it.
bool is_valid_utf8(std::string_view text);

// `text` itself when at most `max` bytes, else its first bytes (cut on a UTF-8 character
// boundary) followed by "... (N bytes)".
std::string abbreviated(std::string_view text, std::size_t max = 60);

}  // namespace gemvtune::cache
