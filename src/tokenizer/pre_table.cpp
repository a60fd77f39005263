// The regexes are llama.cpp's (src/llama-vocab.cpp), which spells some tokenizer.json patterns with
// explicit case classes or lookaheads its std::regex fallback can run; PCRE2 runs those spellings
// with the same meaning.
#include "tokenizer/pre_table.h"

#include <algorithm>

namespace glia::tok {

namespace {

// GPT-2's pattern (without the trailing \s+, which never changes the pieces: a lone whitespace
// character it would match is left between two matches as its own piece anyway).
constexpr const char* gpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

std::string llama3_like(const char* numbers) {
  return std::string(contractions) + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" + numbers +
         "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
}

// deepseek-llm's cased letters, "[A-Za-zµÀ-ÖØ-ö...𞤀-𞥃]+" in llama.cpp, as code points.
const std::string deepseek_llm_letters =
    "\\s?[\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-"
    "\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}-\\x{377}\\x{37B}-\\x{37D}"
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}"
    "\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}"
    "\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}"
    "\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}"
    "\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
    "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-"
    "\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-"
    "\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}-\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}"
    "\\x{2CEB}-\\x{2CEE}\\x{2CF2}-\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
    "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-"
    "\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+";

// "[一-龥ࠀ-一가-퟿]+": CJK ideographs, U+0800..U+4E00, Hangul syllables.
const std::string cjk_hangul = "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";
// "[一-龥぀-ゟ゠-ヿ]+": CJK ideographs, Hiragana, Katakana.
const std::string cjk_kana = "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+";
const std::string deepseek3_main =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+"
    "[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
// " ?[^(\\s|.,!?…。，、।۔،)]+"
const std::string bloom = " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+";
const std::string case_split =  // tekken and gpt-4o: letters split at lower->upper case changes
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+";
const std::string case_split2 = "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*";

bool in(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::optional<pre_type> find_pre_type(std::string_view name) {
  pre_type p;
  const std::string l3 = llama3_like("\\p{N}{1,3}");
  const std::string qwen = llama3_like("\\p{N}");
  if (name.empty() || name == "default") {
    p.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", gpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
  } else if (in(name, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                       "jina-v5-nano"})) {
    p.regexes = {l3};
    p.ignore_merges = true;
    p.add_bos = true;
  } else if (in(name, {"dbrx", "smaug-bpe"})) {
    p.regexes = {l3};
  } else if (in(name, {"glm4", "chatglm-bpe"})) {
    p.regexes = {l3};
    p.no_bos = true;
  } else if (name == "jais-2") {
    p.regexes = {std::string(contractions) +
                 "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|"
                 "\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|"
                 "\\s{1,2}(?!\\S)|\\s{1}"};
  } else if (name == "deepseek-llm") {
    p.regexes = {"[\r\n]", deepseek_llm_letters, "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
                 "\\s+$", cjk_hangul, "\\p{N}+"};
    p.clean_spaces = false;
  } else if (name == "deepseek-coder") {
    p.regexes = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", cjk_hangul, "\\p{N}"};
    p.clean_spaces = false;
  } else if (in(name, {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"})) {
    p.regexes = {"\\p{N}{1,3}", cjk_kana, deepseek3_main};
    p.clean_spaces = false;
  } else if (name == "falcon") {
    p.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", gpt2, "[0-9][0-9][0-9]"};
  } else if (in(name, {"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"})) {
    p.regexes = {"\\p{N}", gpt2};
  } else if (in(name, {"command-r", "smollm"})) {
    p.regexes = {"\\p{N}", gpt2};
    p.clean_spaces = false;
  } else if (in(name, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
                       "mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais"})) {
    p.regexes = {gpt2};
  } else if (in(name, {"trillion", "granite-docling"})) {
    p.regexes = {gpt2};
    p.clean_spaces = false;
  } else if (in(name, {"stablelm2", "megrez"})) {
    p.regexes = {qwen};
  } else if (in(name, {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"})) {
    p.regexes = {qwen};
    p.clean_spaces = false;
  } else if (name == "qwen35") {
    p.regexes = {std::string(contractions) +
                 "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                 "\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
  } else if (in(name, {"poro-chat", "bloom", "gpt3-finnish"})) {
    p.regexes = {bloom};
    p.clean_spaces = name != "poro-chat";
  } else if (name == "viking") {
    p.regexes = {bloom, "\\p{N}"};
    p.clean_spaces = false;
  } else if (name == "tekken") {
    p.regexes = {case_split + "|" + case_split2 +
                 "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
    p.ignore_merges = true;
    p.add_bos = true;
  } else if (name == "chameleon") {
    p.regexes = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
                 "[\\p{P}!-/:-@\\[-`{-~]", gpt2};
    p.add_bos = true;
    p.clean_spaces = false;
  } else if (in(name, {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) {
    const std::string c = std::string("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?");
    p.regexes = {case_split + c + "|" + case_split2 + c +
                 "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
  } else if (name == "superbpe") {
    p.regexes = {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"};
    p.clean_spaces = false;
  } else if (in(name, {"bailingmoe", "bailingmoe2", "llada-moe"})) {
    p.regexes = {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
                 "[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
  } else if (name == "seed-coder") {
    p.regexes = {std::string(contractions) +
                 "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
  } else if (name == "ufakzeka") {
    p.regexes = {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
  } else if (name == "laguna") {
    p.regexes = {"[^\\n]+|[\\n]+", qwen};
    p.clean_spaces = false;
  } else if (name == "exaone-moe") {
    p.regexes = {std::string(contractions) +
                 "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|"
                 "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"};
  } else if (name == "minicpm5") {
    p.regexes = {"\\p{N}{1,3}", llama3_like("\\p{N}+")};
    p.ignore_merges = true;
  } else if (in(name, {"gemma4", "granite-embed-multi-311m"})) {
    p.regexes = {"[^\\n]+|[\\n]+"};
    p.byte_encode = false;
  } else if (name == "spark2_5") {
    p.regexes = {"\\p{N}{1,3}", cjk_kana,
                 "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?"
                 "[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
                 "\\p{N}"};
    p.clean_spaces = false;
  } else if (name == "youtu") {
    p.regexes = {"[\\x{AC00}-\\x{D7A3}\\x{3131}-\\x{318E}]+|[\\x{FF01}\\x{2026}\\x{201C}\\x{201D}\\x{2018}\\x{2019}\\x{2014}"
                 "\\x{FF1A}\\x{FF1B}\\x{FF0C}\\x{3001}-\\x{303F}\\x{FE30}-\\x{FE4F}]+|[\\x{3105}-\\x{312F}]+|" + cjk_kana,
                 std::string("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+") +
                     contractions + "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" +
                     contractions + "?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
    p.ignore_merges = true;
  } else if (name == "granite-embed-multi-97m") {
    // gpt-4o's lookaheads with \p{M}, so combining marks stay on their letters.
    const std::string c = std::string(contractions) + "?";
    p.regexes = {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+" + c +
                 "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*" + c +
                 "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    p.clean_spaces = false;
    p.ignore_merges = true;
  } else if (name == "sarvam-moe") {
    p.regexes = {"[^\\n]+|[\\n]+"};
    p.byte_encode = false;
    p.clean_spaces = false;
  } else {
    return std::nullopt;
  }
  return p;
}

pipeline_spec gguf_bpe_pipeline(const pre_type& p) {
  pipeline_spec s;
  s.dialect = regex_dialect::llama_cpp;
  s.repair = repair_mode::per_byte;
  if (!p.byte_encode) {  // SPM-style: spaces become "▁" before the split
    normalizer_spec n;
    n.what = normalizer_spec::kind::replace;
    n.pattern = {" ", false};
    n.content = "\xE2\x96\x81";
    s.normalizers.push_back(n);
  }
  for (const auto& r : p.regexes) {
    pre_tokenizer_spec t;
    t.what = pre_tokenizer_spec::kind::split;
    t.pattern = {r, true};
    t.behavior = split_behavior::isolated;
    s.pre_tokenizers.push_back(t);
  }
  if (p.byte_encode) {
    pre_tokenizer_spec t;
    t.what = pre_tokenizer_spec::kind::byte_level;
    t.use_regex = false;
    s.pre_tokenizers.push_back(t);
  }
  s.ignore_merges = p.ignore_merges;
  s.whole_newline_runs = !p.byte_encode;
  s.missing = p.byte_encode ? missing_piece::llama_cpp_bytes : missing_piece::llama_cpp_hex;
  s.cleanup = p.clean_spaces ? cleanup_style::llama_cpp : cleanup_style::none;
  return s;
}

}  // namespace glia::tok
