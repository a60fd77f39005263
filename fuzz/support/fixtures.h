// Loaded-once inputs that targets fuzz against (a vocabulary, later a chat template). Each is read
// from the shared test-data pack on first use; a missing file ends the run (setup, not a finding).
// A new tokenizer kind (BPE) adds one function here and one small target file in fuzz/targets/.
#pragma once

#include "tokenizer/tokenizer.h"

namespace glia::fuzz {

// The Brown model's SentencePiece vocabulary (1024 tokens, byte fallback), from models/brown-f32.gguf.
const tokenizer& brown_tokenizer();

}  // namespace glia::fuzz
