// The inside of glia::text_stream (shared by text_stream.cpp and session.cpp, which creates it).
#pragma once

#include "glia/session.h"
#include "tokenizer/tokenizer.h"

namespace glia {

struct text_stream::impl {
  impl(const tokenizer& tok, bool raw) : dec(tok, false, false, raw) {}
  stream_decoder dec;
};

}  // namespace glia
