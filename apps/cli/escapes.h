// llama.cpp's -e (on by default there): backslash escapes in a typed prompt or stop text (\n, \r,
// \t, \', \", \\, \xHH) become the characters they name, so `-p "Q:\nA:"` is two lines. Anything
// else after a backslash stays as typed. Text read from a file (-f) is never touched.
#pragma once

#include <string>

namespace glia::cli {

std::string process_escapes(const std::string& s);

}  // namespace glia::cli
