// Python string formatting: printf-style ("%s" % x, the `format` filter), str.format with the
// common format-spec features, and strftime for strftime_now.
#include <cmath>
#include <cstdio>
#include <ctime>

#include "tokenizer/jinja/interp.h"
#include "core/status.h"
#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {
namespace {

std::string pad_text(const std::string& s, int64_t width, char align, const std::string& fill) {
  const int64_t len = int64_t(ustr::length(s));
  if (width <= len) return s;
  const int64_t total = width - len;
  const int64_t left = align == '>' ? total : align == '^' ? total / 2 : 0;
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

// A number through C's printf, which Python's %-formatting and format specs follow for these types.
std::string c_format(const std::string& spec, double d) {
  char buf[512];
  std::snprintf(buf, sizeof buf, spec.c_str(), d);
  return buf;
}
std::string c_format_int(const std::string& spec, long long i) {
  char buf[512];
  std::snprintf(buf, sizeof buf, spec.c_str(), i);
  return buf;
}

}  // namespace

result<std::string> percent_format(const std::string& fmt, const value& args) {
  std::vector<value> pos;
  const value* mapping = nullptr;
  if (args.is_array() && args.arr().kind == seq_kind::tuple) pos = args.arr().items;
  else if (args.is_object()) mapping = &args, pos = {args};
  else pos = {args};
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) return make_error("ValueError: incomplete format");
    const value* arg = nullptr;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos) return make_error("ValueError: incomplete format key");
      if (!mapping) return make_error("TypeError: format requires a mapping");
      arg = mapping->obj().find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (!arg) return make_error("KeyError: '{}'", fmt.substr(i + 1, close - i - 1));
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) flags += fmt[i++];
    auto number = [&](int64_t& n) -> status {
      n = -1;
      if (i < fmt.size() && fmt[i] == '*') {
        ++i;
        if (next >= pos.size() || !pos[next].is_int()) return make_error("TypeError: * wants int");
        n = pos[next++].as_int();
        return {};
      }
      if (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
        n = 0;
        while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])) && n < 100000) n = n * 10 + (fmt[i++] - '0');
      }
      return {};
    };
    int64_t width, precision = -1;
    GLIA_TRY(number(width));
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      GLIA_TRY(number(precision));
      if (precision < 0) precision = 0;
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) return make_error("ValueError: incomplete format");
    const char type = fmt[i];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!arg) {
      if (next >= pos.size()) return make_error("TypeError: not enough arguments for format string");
      arg = &pos[next++];
    }
    if (width > 4096 || precision > 4096) return make_error("LimitExceeded: format width or precision too large");
    const std::string spec_head = "%" + flags + (width >= 0 ? std::to_string(width) : "") +
                                  (precision >= 0 ? "." + std::to_string(precision) : "");
    std::string piece;
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = type == 's' ? to_str(*arg) : repr(*arg);
        if (precision >= 0) {
          const auto b = ustr::boundaries(s);
          if (size_t(precision) + 1 < b.size()) s.resize(b[size_t(precision)]);
        }
        piece = pad_text(s, width, flags.find('-') != std::string::npos ? '<' : '>', " ");
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'o':
      case 'x':
      case 'X': {
        if (!arg->is_number())
          return make_error("TypeError: %{} format: a real number is required, not {}", type, type_name(*arg));
        const long long v = arg->is_float() ? (long long)std::trunc(arg->as_float()) : arg->int_like();
        const char t = type == 'i' || type == 'u' ? 'd' : type;
        piece = c_format_int(spec_head + "ll" + t, v);
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (!arg->is_number())
          return make_error("TypeError: must be real number, not {}", type_name(*arg));
        piece = c_format(spec_head + type, arg->number());
        break;
      }
      case 'c': {
        if (arg->is_string() && ustr::length(arg->str()) == 1) piece = arg->str();
        else if (arg->is_int() && arg->as_int() >= 0 && arg->as_int() <= 0x10FFFF) ustr::append(piece, uint32_t(arg->as_int()));
        else return make_error("TypeError: %c requires int or char");
        piece = pad_text(piece, width, flags.find('-') != std::string::npos ? '<' : '>', " ");
        break;
      }
      default: return make_error("ValueError: unsupported format character '{}'", type);
    }
    out += piece;
  }
  // PyUnicode_Format: a non-tuple argument that supports __getitem__ (a list as well as a dict) may
  // be a mapping, so leaving it unused is not an error.
  const bool mapping_like = args.is_array() && args.arr().kind != seq_kind::tuple && args.arr().kind != seq_kind::generator;
  if (!used_mapping && !mapping && !mapping_like && next < pos.size())
    return make_error("TypeError: not all arguments converted during string formatting");
  return out;
}

namespace {

// format(value, spec) for str.format: [[fill]align][sign][#][0][width][,|_][.precision][type].
result<std::string> format_spec(const value& v, const std::string& spec) {
  if (spec.empty()) return to_str(v);
  size_t i = 0;
  std::string fill = " ";
  char align = 0;
  size_t first_len = 0;
  if (!spec.empty()) ustr::decode(spec, 0, first_len);
  if (first_len < spec.size() && std::string_view("<>^=").find(spec[first_len]) != std::string_view::npos) {
    fill = spec.substr(0, first_len);
    align = spec[first_len];
    i = first_len + 1;
  } else if (std::string_view("<>^=").find(spec[0]) != std::string_view::npos) {
    align = spec[0];
    i = 1;
  }
  char sign = 0;
  if (i < spec.size() && std::string_view("+- ").find(spec[i]) != std::string_view::npos) sign = spec[i++];
  bool alt = false, zero = false;
  if (i < spec.size() && spec[i] == '#') alt = true, ++i;
  if (i < spec.size() && spec[i] == '0') zero = true, ++i;
  int64_t width = 0, precision = -1;
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])) && width < 100000) width = width * 10 + (spec[i++] - '0');
  char grouping = 0;
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    precision = 0;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])) && precision < 100000)
      precision = precision * 10 + (spec[i++] - '0');
  }
  char type = i < spec.size() ? spec[i++] : 0;
  if (i != spec.size()) return make_error("ValueError: Invalid format specifier '{}'", spec);
  if (width > 4096 || precision > 4096) return make_error("LimitExceeded: format width or precision too large");
  if (zero && !align) fill = "0", align = '=';

  std::string body, prefix;
  if (v.is_string() || (!v.is_number() && !type)) {
    if (type && type != 's') return make_error("ValueError: Unknown format code '{}' for object of type '{}'", type, type_name(v));
    body = to_str(v);
    if (precision >= 0) {
      const auto b = ustr::boundaries(body);
      if (size_t(precision) + 1 < b.size()) body.resize(b[size_t(precision)]);
    }
    return pad_text(body, width, align ? (align == '=' ? '<' : align) : '<', fill);
  }
  if (!v.is_number()) return make_error("ValueError: Unknown format code '{}' for object of type '{}'", type, type_name(v));
  const bool integer_type = std::string_view("dbxXoc").find(type) != std::string_view::npos && type;
  if (integer_type && v.is_float()) return make_error("ValueError: Unknown format code '{}' for object of type 'float'", type);
  double d = v.number();
  bool neg;
  if (integer_type || (!type && !v.is_float())) {
    long long x = v.int_like();
    neg = x < 0;
    unsigned long long ux = neg ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    if (type == 'c') return pad_text(std::string(1, char(ux)), width, align ? align : '<', fill);
    const int base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : type == 'b' ? 2 : 10;
    do {
      const int dig = int(ux % unsigned(base));
      body.insert(body.begin(), char(dig < 10 ? '0' + dig : (type == 'X' ? 'A' : 'a') + dig - 10));
      ux /= unsigned(base);
    } while (ux);
    if (alt && base != 10) prefix = std::string("0") + (type ? type : 'd');
  } else {
    neg = std::signbit(d);
    d = std::fabs(d);
    if (!type) {
      body = precision < 0 ? float_repr(d) : c_format("%." + std::to_string(precision) + "g", d);
    } else if (type == '%') {
      body = c_format("%." + std::to_string(precision < 0 ? 6 : precision) + "f", d * 100) + "%";
    } else if (std::string_view("eEfFgG").find(type) != std::string_view::npos) {
      body = c_format(std::string("%") + (alt ? "#" : "") + "." + std::to_string(precision < 0 ? 6 : precision) + type, d);
    } else {
      return make_error("ValueError: Unknown format code '{}' for object of type 'float'", type);
    }
  }
  if (grouping) {
    const size_t dot = body.find_first_not_of("0123456789");
    const size_t int_end = dot == std::string::npos ? body.size() : dot;
    std::string grouped;
    for (size_t k = 0; k < int_end; ++k) {
      if (k && (int_end - k) % 3 == 0) grouped += grouping;
      grouped += body[k];
    }
    body = grouped + body.substr(int_end);
  }
  const std::string sign_text = neg ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
  if (align == '=') {
    const std::string head = sign_text + prefix;
    const int64_t len = int64_t(ustr::length(head + body));
    std::string padding;
    for (int64_t k = len; k < width; ++k) padding += fill;
    return head + padding + body;
  }
  return pad_text(sign_text + prefix + body, width, align ? align : '>', fill);
}

}  // namespace

result<std::string> brace_format(const std::string& fmt, const call_args& args) {
  std::string out;
  size_t auto_index = 0;
  bool manual = false, automatic = false;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}', ++i;
        continue;
      }
      return make_error("ValueError: Single '}}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{', ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) return make_error("ValueError: Single '{{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec;
    char conv = 0;
    if (size_t colon = field.find(':'); colon != std::string::npos) spec = field.substr(colon + 1), field.resize(colon);
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size()) return make_error("ValueError: expected ':' after conversion specifier");
      conv = field[bang + 1];
      field.resize(bang);
    }
    // The argument name, then .attr / [key] steps.
    size_t name_end = field.find_first_of(".[");
    const std::string name = field.substr(0, name_end);
    value v;
    if (name.empty()) {
      if (manual) return make_error("ValueError: cannot switch from manual field specification to automatic field numbering");
      automatic = true;
      if (auto_index >= args.pos.size()) return make_error("IndexError: Replacement index {} out of range for positional args tuple", auto_index);
      v = args.pos[auto_index++];
    } else if (std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      if (automatic) return make_error("ValueError: cannot switch from automatic field numbering to manual field specification");
      manual = true;
      const size_t k = std::stoul(name.substr(0, 9));
      if (k >= args.pos.size()) return make_error("IndexError: Replacement index {} out of range for positional args tuple", k);
      v = args.pos[k];
    } else {
      auto it = std::find_if(args.kw.begin(), args.kw.end(), [&](const auto& p) { return p.first == name; });
      if (it == args.kw.end()) return make_error("KeyError: '{}'", name);
      v = it->second;
    }
    while (name_end != std::string::npos && name_end < field.size()) {
      if (field[name_end] == '.') {
        const size_t e = field.find_first_of(".[", name_end + 1);
        GLIA_ASSIGN(v, get_attr(v, field.substr(name_end + 1, e == std::string::npos ? std::string::npos : e - name_end - 1)));
        name_end = e;
      } else {
        const size_t e = field.find(']', name_end);
        if (e == std::string::npos) return make_error("ValueError: Missing ']' in format string");
        const std::string key = field.substr(name_end + 1, e - name_end - 1);
        const bool digits = !key.empty() && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        GLIA_ASSIGN(v, get_item(v, digits ? value::integer(std::stoll(key.substr(0, 18))) : value::string(key)));
        name_end = e + 1;
      }
      if (v.is_undefined()) return undefined_error(v);
    }
    if (conv == 'r' || conv == 'a') v = value::string(repr(v));
    else if (conv == 's') v = value::string(to_str(v));
    else if (conv) return make_error("ValueError: Unknown conversion specifier {}", conv);
    GLIA_ASSIGN(std::string piece, format_spec(v, spec));
    out += piece;
  }
  return out;
}

result<std::string> strftime(const std::string& fmt, const civil_time& t) {
  if (fmt.size() > 4096) return make_error("LimitExceeded: strftime format longer than 4096 bytes");
  std::tm tm{};
  tm.tm_year = t.year - 1900;
  tm.tm_mon = t.month - 1;
  tm.tm_mday = t.day;
  tm.tm_hour = t.hour;
  tm.tm_min = t.minute;
  tm.tm_sec = t.second;
  // Normalizes the fields and fills the weekday and day of the year.
  const std::time_t secs = timegm(&tm);
  gmtime_r(&secs, &tm);
  if (fmt.empty()) return std::string();
  std::vector<char> buf(fmt.size() * 64 + 256);
  const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  if (n == 0) return make_error("ValueError: strftime output too long or empty");
  return std::string(buf.data(), n);
}

}  // namespace glia::jinja
