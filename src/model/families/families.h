// One fill function per architecture; each starts from read_common and sets what differs.
#pragma once

#include "model/families/family_common.h"

namespace glia::families {

status fill_llama(const arch_metadata& md, family_profile& p);
status fill_qwen2(const arch_metadata& md, family_profile& p);
status fill_qwen3(const arch_metadata& md, family_profile& p);
status fill_gemma(const arch_metadata& md, family_profile& p);
status fill_gemma2(const arch_metadata& md, family_profile& p);
status fill_gemma3(const arch_metadata& md, family_profile& p);
status fill_gemma4(const arch_metadata& md, family_profile& p);

}  // namespace glia::families
