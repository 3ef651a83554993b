// Reads EIATTR_REGCOUNT and EIATTR_FRAME_SIZE from a cubin's .nv.info section. Each entry is
// {u8 format, u8 attribute, u16 size} then, for format 4 (EIFMT_SVAL), `size` bytes of payload:
// here {u32 function symbol, u32 value}. Checked against ptxas' -v report on the whole search
// space by tests/jit/cubin_info_test.cpp.
#include "jit/cubin_info.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "jit/elf_image.hpp"

namespace gemvtune::jit {

namespace {
constexpr std::uint8_t kFormatValue = 4;      // EIFMT_SVAL: a payload follows
constexpr std::uint8_t kAttrRegCount = 0x2f;  // EIATTR_REGCOUNT
constexpr std::uint8_t kAttrFrameSize = 0x11; // EIATTR_FRAME_SIZE

template <typename T>
bool read(const std::vector<char>& b, std::uint64_t offset, T& out) {
  if (offset > b.size() || b.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, b.data() + offset, sizeof(T));
  return true;
}
}  // namespace

std::optional<CubinResources> read_cubin_resources(const std::vector<char>& b) {
  const auto sections = read_elf_sections(b);
  if (!sections) return std::nullopt;
  // Shared memory: .nv.shared.<kernel> is a NOBITS section whose size is what a block takes
  // (on sm_90 its static variables and the system's 1 KB; .nv.shared.reserved.* are separate).
  int shared = 0;
  for (const ElfSection& section : *sections)
    if (section.name.rfind(".nv.shared.", 0) == 0 && section.name.rfind(".nv.shared.reserved", 0) != 0 &&
        section.size <= (1u << 30))
      shared = std::max(shared, static_cast<int>(section.size));
  for (const ElfSection& section : *sections) {
    if (section.name != ".nv.info" || section.offset > b.size() || section.size > b.size() - section.offset)
      continue;
    const std::uint64_t off = section.offset, size = section.size;
    CubinResources r;
    r.shared_bytes = shared;
    bool found = false;
    for (std::uint64_t p = off; p + 4 <= off + size;) {
      const auto format = static_cast<std::uint8_t>(b[p]);
      const auto attr = static_cast<std::uint8_t>(b[p + 1]);
      std::uint16_t payload = 0;
      read(b, p + 2, payload);
      if (format != kFormatValue) {  // value held in the 16 bits, no payload
        p += 4;
        continue;
      }
      std::uint32_t value = 0;
      if (payload >= 8 && read(b, p + 8, value)) {
        if (attr == kAttrRegCount) {
          r.registers = std::max<int>(r.registers, static_cast<int>(value));
          found = true;
        } else if (attr == kAttrFrameSize) {
          r.stack_frame_bytes = std::max<int>(r.stack_frame_bytes, static_cast<int>(value));
        }
      }
      p += 4 + payload;
    }
    if (found) return r;
  }
  return std::nullopt;
}

}  // namespace gemvtune::jit
