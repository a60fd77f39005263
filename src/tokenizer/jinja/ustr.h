// Python str operations on UTF-8 bytes. Python indexes strings by code point, so lengths, indexes
// and slices go through code point boundaries; bytes that are not valid UTF-8 count as one
// character each so that any byte string round-trips.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace glia::jinja::ustr {

// Decodes the character at `pos`; returns its code point and sets `len` to its byte length.
uint32_t decode(std::string_view s, size_t pos, size_t& len);
void append(std::string& out, uint32_t cp);

bool is_ascii(std::string_view s);
// Byte offset of every character start, plus s.size() at the end.
std::vector<size_t> boundaries(std::string_view s);
size_t length(std::string_view s);
std::vector<std::string> chars(std::string_view s);

// Python's str.isspace() for one code point.
bool is_space(uint32_t cp);
uint32_t to_upper(uint32_t cp);
uint32_t to_lower(uint32_t cp);
uint32_t to_title(uint32_t cp);
bool is_cased_upper(uint32_t cp);
bool is_cased_lower(uint32_t cp);
bool is_titlecase(uint32_t cp);  // category Lt (U+01C5): cased, but neither upper nor lower
bool is_alpha(uint32_t cp);
bool is_digit(uint32_t cp);
bool is_numeric(uint32_t cp);
// Python's str.isprintable() for one code point (what repr() leaves unescaped).
bool is_printable(uint32_t cp);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);  // first character upper, the rest lower
std::string title(std::string_view s);       // Python str.title(): upper after each non-letter

// Python strip family: without chars, Unicode whitespace; with chars, any of those code points.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);

// Python str.split(sep, maxsplit) / rsplit; sep == nullptr splits on runs of whitespace.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
// Python str.splitlines(keepends): every Unicode line boundary (\n, \r\n, \r, \v, \f, \x1c-\x1e,
// \x85, U+2028, U+2029).
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
int64_t count(std::string_view s, std::string_view sub);
// Character index of the first (last) occurrence or -1.
int64_t find(std::string_view s, std::string_view sub, bool last);

}  // namespace glia::jinja::ustr
