#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace glia::tok {

namespace {

// The bytes that stand for themselves: '!'..'~', '¡'..'¬', '®'..'ÿ'.
constexpr bool is_self(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct tables {
  std::array<std::string, 256> chars;
  std::array<int16_t, 0x144> bytes{};  // code point -> byte; the map's image lies below U+0144
  tables() {
    bytes.fill(-1);
    int next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = is_self(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(next++);
      append_utf8(cp, chars[b]);
      bytes[cp] = static_cast<int16_t>(b);
    }
  }
};

const tables& get() {
  static const tables t;
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_level_chars() { return get().chars; }

int byte_level_byte(uint32_t cp) { return cp < get().bytes.size() ? get().bytes[cp] : -1; }

std::string encode_byte_level(std::string_view bytes) {
  const auto& chars = get().chars;
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += chars[static_cast<uint8_t>(c)];
  return out;
}

bool decode_byte_level(std::string_view text, std::string& out) {
  bool all_mapped = true;
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const uint32_t cp = next_codepoint(text, pos);
    const int b = byte_level_byte(cp);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(text.substr(start, pos - start));
      all_mapped = false;
    }
  }
  return all_mapped;
}

}  // namespace glia::tok
