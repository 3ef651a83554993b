// The few facts gemvtune reads from a cubin's ELF container: its section table (for .nv.info,
// see cubin_info) and whether every part it names lies within the bytes (for the kernel store,
// which must never hand a truncated file to the driver). 64-bit little-endian ELF only, as
// every cubin is.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gemvtune::jit {

struct ElfSection {
  std::string name;  // from the section-name string table; empty where that is unreadable
  std::uint32_t type = 0;
  std::uint64_t offset = 0;  // of the contents, in the file
  std::uint64_t size = 0;
};

// The section table; nullopt when the bytes are not a 64-bit ELF image or its section headers
// lie outside them. Section contents are not checked: is_complete_elf does that.
std::optional<std::vector<ElfSection>> read_elf_sections(const std::vector<char>& bytes);

// True when the header, the program and section headers, and every section's and segment's
// contents lie within the bytes. Catches truncation without a GPU.
bool is_complete_elf(const std::vector<char>& bytes);

}  // namespace gemvtune::jit
