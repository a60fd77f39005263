// GPT-2's reversible byte <-> character map used by byte-level BPE vocabularies: every byte becomes a
// printable character (printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100 and
// up, in byte order), so token texts never contain spaces or control characters.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace glia::tok {

// UTF-8 text of the character byte `b` is written as ("Ġ" for a space).
const std::array<std::string, 256>& byte_level_chars();

// The byte a character stands for; -1 for characters outside the map.
int byte_level_byte(uint32_t cp);

// Byte-level text of raw bytes, and back. decode_byte_level keeps characters outside the map as
// their UTF-8 (an added token's text, say) and returns false when it met any.
std::string encode_byte_level(std::string_view bytes);
bool decode_byte_level(std::string_view text, std::string& out);

}  // namespace glia::tok
