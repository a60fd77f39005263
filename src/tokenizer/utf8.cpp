#include "tokenizer/utf8.h"

#include <algorithm>

namespace glia::tok {

namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

// Table 3-7 of the Unicode Standard (well-formed UTF-8 byte sequences) decides the range of the
// second byte; later bytes are plain continuation bytes.
utf8_scan scan_utf8(std::string_view bytes) {
  using k = utf8_scan::kind;
  if (bytes.empty()) return {k::incomplete, 0};
  const auto b0 = static_cast<uint8_t>(bytes[0]);
  if (b0 < 0x80) return {k::complete, 1};

  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (b0 == 0xED) hi = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong below U+10000
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return {k::invalid, 1};  // continuation byte, C0/C1 overlong lead, or F5..FF
  }

  for (size_t i = 1; i < need; ++i) {
    if (i >= bytes.size()) return {k::incomplete, 0};
    const auto b = static_cast<uint8_t>(bytes[i]);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return {k::invalid, i};
  }
  return {k::complete, need};
}

size_t append_valid_utf8(std::string_view bytes, std::string& out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const utf8_scan s = scan_utf8(bytes.substr(pos));
    switch (s.what) {
      case utf8_scan::kind::complete:
        out.append(bytes.substr(pos, s.length));
        pos += s.length;
        break;
      case utf8_scan::kind::invalid:
        out.append(replacement_char);
        pos += s.length;
        break;
      case utf8_scan::kind::incomplete:
        return pos;
    }
  }
  return pos;
}

uint32_t next_codepoint(std::string_view text, size_t& pos) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  const size_t n = std::min(utf8_lead_length(b0), text.size() - pos);
  uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
  pos += n;
  return cp;
}

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    // ASCII runs are the common case.
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const utf8_scan s = scan_utf8(text.substr(pos));
    if (s.what != utf8_scan::kind::complete) return false;
    pos += s.length;
  }
  return true;
}

std::string repair_utf8(std::string_view text, repair_mode mode) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0;
  while (pos < text.size()) {
    const utf8_scan s = scan_utf8(text.substr(pos));
    if (s.what == utf8_scan::kind::complete) {
      out.append(text.substr(pos, s.length));
      pos += s.length;
      continue;
    }
    out.append(replacement_char);
    // An incomplete sequence at the end is one maximal subpart.
    const size_t bad = s.what == utf8_scan::kind::incomplete ? text.size() - pos : s.length;
    pos += mode == repair_mode::per_byte ? 1 : bad;
  }
  return out;
}

}  // namespace glia::tok
