// glia::text_stream: the tokenizer's stream_decoder behind the public API, so front ends never
// include tokenizer internals.
#include "runtime/text_stream_impl.h"

namespace glia {

text_stream::text_stream(std::unique_ptr<impl> p) : p_(std::move(p)) {}
text_stream::~text_stream() = default;
std::string text_stream::push(int32_t id) { return p_->dec.push(id); }
std::string text_stream::flush() { return p_->dec.flush(); }

}  // namespace glia
