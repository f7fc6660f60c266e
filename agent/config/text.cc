// Text helpers of the configuration loader (agent/config/text.h).
#include "agent/config/text.h"

#include <cstring>

#include <fmt/format.h>

namespace ripple::config {

std::string shown(std::string_view v) {
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < 60; ++i) {
    const auto ch = static_cast<unsigned char>(v[i]);
    if (ch < 0x20 || ch == 0x7f) out += fmt::format("\\x{:02x}", ch);
    else out += static_cast<char>(ch);
  }
  if (v.size() > 60) out += fmt::format("... ({} bytes)", v.size());
  return out;
}

// The line of the first non-ASCII byte outside a string or a comment, or 0. TOML allows
// none there, and toml++ 3.3 (Debian 12) reaches __builtin_unreachable() on some of them
// (U+00A1..U+0499, U+2D3E..U+3137, U+FB06..U+FEFE where it looks for whitespace:
// is_non_ascii_horizontal_whitespace),
// which is undefined behaviour in the agent; found by tests/fuzz/fuzz_config. Such a
// file is refused here, before toml++ sees it. A quote opens a string only where a key
// or a value may begin (a line start, after '=', '[', '{', ',' or '.'), as in any valid
// file; elsewhere (as in "0z'''") toml++ does not read a string either.
//
// Inside strings the code points toml++ 3.3 cannot classify (U+00A1..U+0499,
// U+2D3E..U+3137 but U+3000, U+FB06..U+FEFE) are refused too: its error path reads
// the rest of a bad token as possible whitespace, and this scan cannot always tell
// where toml++ sees a string ('4"."x"' is no dotted key to toml++), nor what follows a
// line-ending backslash. *in_string says which of the two it was.
bool toml_unsafe_code_point(std::string_view t, std::size_t i) {
  const auto b = [&](std::size_t k) { return i + k < t.size() ? static_cast<unsigned char>(t[i + k]) : 0u; };
  if (b(0) >= 0xC2 && b(0) < 0xE0) {
    const unsigned cp = ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    return cp >= 0xA1 && cp <= 0x499;
  }
  if (b(0) >= 0xE0 && b(0) < 0xF0) {
    const unsigned cp = ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    return (cp >= 0x2D3E && cp <= 0x3137 && cp != 0x3000) || (cp >= 0xFB06 && cp <= 0xFEFE);
  }
  return false;
}

int non_ascii_outside_strings(std::string_view t, bool* in_string) {
  enum { kCode, kComment, kBasic, kLiteral, kMlBasic, kMlLiteral } st = kCode;
  int line = 1;
  char last = '\n';  // the last character in code other than a space or a tab
  *in_string = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char ch = t[i];
    if (st != kCode && st != kComment && toml_unsafe_code_point(t, i)) {
      *in_string = true;
      return line;
    }
    const bool triple = t.substr(i, 3) == (ch == '"' ? "\"\"\"" : "'''");
    if (ch == '\n') {
      ++line;
      if (st != kMlBasic && st != kMlLiteral) st = kCode, last = '\n';
      continue;
    }
    switch (st) {
      case kCode:
        if (static_cast<unsigned char>(ch) >= 0x80) return line;
        if (ch == '#') {
          st = kComment;
        } else if ((ch == '"' || ch == '\'') && last != '\0' && std::strchr("\n=[{,.", last)) {
          st = triple ? (ch == '"' ? kMlBasic : kMlLiteral) : (ch == '"' ? kBasic : kLiteral);
          if (triple) i += 2;
          last = ch;
        } else if (ch != ' ' && ch != '\t') {
          last = ch;
        }
        break;
      case kComment: break;
      case kBasic:
      case kMlBasic:
        // An escape is ASCII; toml++ reads what follows a backslash as possible whitespace.
        if (ch == '\\' && i + 1 < t.size() && static_cast<unsigned char>(t[i + 1]) >= 0x80) return line;
        if (st == kMlBasic) {
          if (ch == '\\') {  // an escape, or a line-ending backslash: toml++ trims what follows
            std::size_t j = i + 1;
            while (j < t.size() && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r')) ++j;
            if (j < t.size() && t[j] == '\n') {
              for (; j < t.size() && std::strchr(" \t\r\n", t[j]) && t[j] != '\0'; ++j) line += t[j] == '\n';
              if (j < t.size() && static_cast<unsigned char>(t[j]) >= 0x80) return line;
              i = j - 1;
            } else {
              ++i;
            }
          } else if (ch == '"' && triple) {
            st = kCode, i += 2;
          }
        } else if (ch == '\\') ++i;
        else if (ch == '"') st = kCode;
        break;
      case kLiteral:
        if (ch == '\'') st = kCode;
        break;
      case kMlLiteral:
        if (ch == '\'' && triple) st = kCode, i += 2;
        break;
    }
  }
  return 0;
}

}  // namespace ripple::config
