// UTF-8 helpers shared by the tokenizers and the streaming decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/utf8_encode.h"
#include <string_view>

namespace glia::tok {

// Length of the UTF-8 sequence that `lead` starts, judged from its high nibble alone, the way
// llama.cpp splits text into symbols: continuation bytes and invalid lead bytes count as one-byte
// (0x80..0xBF) or four-byte (0xF8..0xFF) characters, so any byte string splits without failing.
inline size_t utf8_lead_length(uint8_t lead) {
  static constexpr uint8_t lengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lengths[lead >> 4];
}

// Result of inspecting the bytes at the start of a buffer (RFC 3629 well-formedness: no overlong
// forms, no surrogates, nothing above U+10FFFF).
struct utf8_scan {
  enum class kind { complete, incomplete, invalid } what;
  // complete: length of the character; invalid: bytes to replace by one U+FFFD (the maximal
  // subpart of an ill-formed sequence, at least 1); incomplete: 0 (more bytes may complete it).
  size_t length;
};
utf8_scan scan_utf8(std::string_view bytes);

// U+FFFD REPLACEMENT CHARACTER.
inline constexpr std::string_view replacement_char = "\xEF\xBF\xBD";

// Appends the valid UTF-8 of `bytes` to `out`, each ill-formed subpart becoming U+FFFD. Stops before
// a trailing sequence that is incomplete but could still be completed and returns its offset
// (bytes.size() when everything was consumed).
size_t append_valid_utf8(std::string_view bytes, std::string& out);

// Decodes the character at `pos` of well-formed UTF-8 and advances `pos` past it.
uint32_t next_codepoint(std::string_view text, size_t& pos);

// How ill-formed input becomes well-formed before pre-tokenization (regexes and normalizers need
// valid UTF-8).
enum class repair_mode {
  maximal_subpart,  // one U+FFFD per maximal ill-formed subpart (WHATWG TextDecoder, Unicode ch. 3)
  per_byte,         // one U+FFFD per byte that does not start a valid character (llama.cpp)
};

// Characters in `bytes` as text offsets count them (OpenAI's logprobs text_offset): every byte but a
// continuation byte starts one, so a character split across two tokens counts once, in the token
// that holds its lead byte.
inline size_t utf8_char_count(std::string_view bytes) {
  size_t n = 0;
  for (unsigned char c : bytes) n += (c & 0xC0) != 0x80;
  return n;
}

// True when `text` is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);

// `text` with every ill-formed sequence replaced by U+FFFD as `mode` says.
std::string repair_utf8(std::string_view text, repair_mode mode);

}  // namespace glia::tok
