// Strict UTF-8, one byte at a time: a token's text may end inside a character (byte-fallback tokens),
// so the grammar matcher carries the bytes of an unfinished character from one token to the next.
// (The tokenizer layer has its own UTF-8 helpers; the sampler layer does not depend on it.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace glia::grammar {

// Bytes of a character not yet complete (at most 3 of its up to 4).
struct utf8_partial {
  uint32_t value = 0;  // bits collected so far
  uint8_t have = 0;    // bytes seen
  uint8_t need = 0;    // bytes the character has in all (0: no character in progress)
  bool operator==(const utf8_partial&) const = default;
  bool empty() const { return need == 0; }
};

enum class utf8_step { more, done, invalid };

// Feeds one byte; on `done`, cp holds the character and p is empty again. Overlong forms, surrogates
// and values past U+10FFFF are invalid, as are stray continuation bytes.
inline utf8_step feed_utf8(utf8_partial& p, uint8_t b, uint32_t& cp) {
  if (p.need == 0) {
    if (b < 0x80) {
      cp = b;
      return utf8_step::done;
    }
    if (b >= 0xC2 && b <= 0xDF) p = {uint32_t(b & 0x1F), 1, 2};
    else if (b >= 0xE0 && b <= 0xEF) p = {uint32_t(b & 0x0F), 1, 3};
    else if (b >= 0xF0 && b <= 0xF4) p = {uint32_t(b & 0x07), 1, 4};
    else return utf8_step::invalid;
    return utf8_step::more;
  }
  if ((b & 0xC0) != 0x80) return utf8_step::invalid;
  const uint32_t v = (p.value << 6) | (b & 0x3F);
  // The second byte settles overlong forms, surrogates and the U+10FFFF limit.
  if (p.have == 1) {
    if (p.need == 3 && (v < 0x20 || (v >= 0x360 && v < 0x380))) return utf8_step::invalid;  // < U+0800, D800-DFFF
    if (p.need == 4 && (v < 0x10 || v >= 0x110)) return utf8_step::invalid;               // < U+10000, > U+10FFFF
  }
  p.value = v;
  if (++p.have < p.need) return utf8_step::more;
  cp = v;
  p = {};
  return utf8_step::done;
}

// The code points a character begun with these bytes can still become.
inline std::pair<uint32_t, uint32_t> utf8_partial_range(const utf8_partial& p) {
  const int missing = p.need - p.have;
  const uint32_t lo = p.value << (6 * missing);
  // A lead byte alone (E0, F0) leaves room below the length's first character: overlong forms,
  // which feed_utf8 refuses, so the range starts at U+0800 / U+10000.
  // And it ends at U+10FFFF (after F4), or before the surrogates (after ED, when the next byte is
  // not yet known).
  const uint32_t first = p.need == 3 ? 0x800 : p.need == 4 ? 0x10000 : 0x80;
  uint32_t hi = std::min<uint32_t>(lo | ((1u << (6 * missing)) - 1), 0x10FFFF);
  if (p.need == 3 && p.have == 1 && p.value == 0xD) hi = 0xD7FF;
  return {std::max(lo, first), hi};
}

// Calls f(cp) for each character of a text; false at an invalid or unfinished character, or when f
// returns false.
template <typename F>
bool for_each_code_point(std::string_view text, F&& f) {
  utf8_partial p;
  for (char c : text) {
    uint32_t cp = 0;
    const utf8_step s = feed_utf8(p, uint8_t(c), cp);
    if (s == utf8_step::invalid) return false;
    if (s == utf8_step::done && !f(cp)) return false;
  }
  return p.empty();
}

}  // namespace glia::grammar
