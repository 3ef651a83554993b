// ELF64 header and section-header reading, every offset bounds-checked against the bytes.
#include "jit/elf_image.hpp"

#include <cstring>

namespace gemvtune::jit {

namespace {
constexpr std::size_t kHeaderBytes = 64;
constexpr std::uint16_t kMinSectionHeader = 0x40;  // sizeof(Elf64_Shdr)
constexpr std::uint16_t kMinProgramHeader = 0x38;  // sizeof(Elf64_Phdr)
constexpr std::uint32_t kSectionNull = 0, kSectionNoBits = 8;

template <typename T>
T read_at(const std::vector<char>& b, std::uint64_t offset) {  // caller checked the bounds
  T v{};
  std::memcpy(&v, b.data() + offset, sizeof(T));
  return v;  // cubins are little-endian, like every host gemvtune runs on
}

// offset + count * size <= total, without overflow.
bool within(std::uint64_t offset, std::uint64_t count, std::uint64_t size, std::uint64_t total) {
  if (offset > total) return false;
  return size == 0 || count <= (total - offset) / size;
}

struct Header {
  std::uint64_t phoff, shoff;
  std::uint16_t phentsize, phnum, shentsize, shnum, shstrndx;
};

std::optional<Header> read_header(const std::vector<char>& b) {
  if (b.size() < kHeaderBytes || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0 || b[4] != 2 /*ELFCLASS64*/)
    return std::nullopt;
  Header h{read_at<std::uint64_t>(b, 0x20), read_at<std::uint64_t>(b, 0x28), read_at<std::uint16_t>(b, 0x36),
           read_at<std::uint16_t>(b, 0x38), read_at<std::uint16_t>(b, 0x3A), read_at<std::uint16_t>(b, 0x3C),
           read_at<std::uint16_t>(b, 0x3E)};
  if (h.shnum == 0 || h.shentsize < kMinSectionHeader || !within(h.shoff, h.shnum, h.shentsize, b.size()))
    return std::nullopt;  // a cubin always has sections
  return h;
}
}  // namespace

std::optional<std::vector<ElfSection>> read_elf_sections(const std::vector<char>& b) {
  const auto h = read_header(b);
  if (!h) return std::nullopt;
  std::vector<ElfSection> sections(h->shnum);
  std::vector<std::uint32_t> name_offsets(h->shnum);
  for (std::uint16_t i = 0; i < h->shnum; ++i) {
    const std::uint64_t at = h->shoff + std::uint64_t{i} * h->shentsize;
    name_offsets[i] = read_at<std::uint32_t>(b, at);
    sections[i].type = read_at<std::uint32_t>(b, at + 0x04);
    sections[i].offset = read_at<std::uint64_t>(b, at + 0x18);
    sections[i].size = read_at<std::uint64_t>(b, at + 0x20);
  }
  if (h->shstrndx < h->shnum) {
    const ElfSection& strtab = sections[h->shstrndx];
    if (within(strtab.offset, 1, strtab.size, b.size()))
      for (std::uint16_t i = 0; i < h->shnum; ++i) {
        if (name_offsets[i] >= strtab.size) continue;
        const char* s = b.data() + strtab.offset + name_offsets[i];
        sections[i].name.assign(s, strnlen(s, strtab.size - name_offsets[i]));
      }
  }
  return sections;
}

bool is_complete_elf(const std::vector<char>& b) {
  const auto h = read_header(b);
  if (!h) return false;
  const auto sections = read_elf_sections(b);
  for (const ElfSection& s : *sections) {
    if (s.type == kSectionNull || s.type == kSectionNoBits) continue;
    if (!within(s.offset, 1, s.size, b.size())) return false;
  }
  if (h->phnum == 0) return true;
  if (h->phentsize < kMinProgramHeader || !within(h->phoff, h->phnum, h->phentsize, b.size())) return false;
  for (std::uint16_t i = 0; i < h->phnum; ++i) {
    const std::uint64_t at = h->phoff + std::uint64_t{i} * h->phentsize;
    if (!within(read_at<std::uint64_t>(b, at + 0x08), 1, read_at<std::uint64_t>(b, at + 0x20), b.size())) return false;
  }
  return true;
}

}  // namespace gemvtune::jit
