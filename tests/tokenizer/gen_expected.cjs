#!/usr/bin/env node
// Differential goldens for glia's Hugging Face tokenizers, produced by the reference the test pack's
// goldens came from: transformers.js tokenizers, npm package @lenml/tokenizers 3.7.2. Never run
// against glia's output; test_tokenizer (hf_diff_test.cpp) checks glia against the files written here.
//
//   npm install --prefix /tmp/tokref @lenml/tokenizers@3.7.2
//   NODE_PATH=/tmp/tokref/node_modules node tests/tokenizer/gen_expected.cjs [--check-pack]
//
// Reads the four tokenizer.json folders of ../shared/testdata/tokenizers (llama2 = Mistral, llama3,
// qwen3, gemma3) and writes tests/tokenizer/diff/<name>.jsonl: one line per (string, add_special,
// parse_special), {"text", "add_special", "parse_special", "ids", "decoded", "decoded_skip_special"}.
// The strings are NOT the pack's: a seeded generator mixes scripts, emoji (ZWJ sequences, flags,
// skin tones, keycaps), combining marks, digit runs, contractions, whitespace runs (\t \n \r U+00A0
// U+3000 ...), special-token text, leading spaces and very long words, so the file is reproducible.
//
// parse_special=false: HF's `split_special_tokens=True` / llama.cpp's parse_special=false, i.e. text
// that looks like a special token stays text. transformers.js has no switch for it, so those rows come
// from the same tokenizer.json with the special (`"special": true`) added tokens removed from
// `added_tokens`; non-special added tokens (Qwen's <think>, ...) are still matched, as in HF and
// llama.cpp (USER_DEFINED tokens).
//
// --check-pack first re-derives the pack's expected.jsonl with this loader, to show the setup is the
// one that produced the pack.
"use strict";
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const { TokenizerLoader } = require("@lenml/tokenizers");

const here = __dirname;
const pack = path.resolve(here, "../../../shared/testdata/tokenizers");
const NAMES = ["llama2", "llama3", "qwen3", "gemma3"];

function loadJSON(name) {
  const dir = path.join(pack, name);
  const tj = JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(dir, "tokenizer.json.gz"))).toString("utf8"));
  const tc = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  return { tj, tc };
}

function load(tj, tc) {
  return TokenizerLoader.fromPreTrained({ tokenizerJSON: tj, tokenizerConfig: tc });
}

// ---- seeded string generator (mulberry32)
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ["the", "The", "Hello", "world", "tokenizer", "don't", "I'm", "you're", "we've", "they'll",
  "she'd", "it's", "HE'S", "WE'LL", "I'LL", "YOU'RE", "Can't", "o'clock", "rock'n'roll", "naïve", "café",
  "über", "Straße", "résumé", "façade", "a", "I", "x", "OK", "GPU", "llama.cpp", "HTTP/1.1", "e-mail",
  "foo_bar", "fooBar", "CamelCaseWord", "snake_case_name", "ALLCAPS", "mIxEd", "http://example.com/a?b=c&d=e",
  "user@example.org", "C++", "C#", "x86_64", "v1.2.3", "3.14159", "1,000,000", "$5.99", "100%", "#hashtag",
  "@mention", "--flag", "...", "?!", "¿Qué?", "¡Hola!", "«quoted»", "“smart”", "‘single’", "—", "…"];
const SCRIPTS = ["日本語のテキスト", "中文字符测试", "한국어 텍스트", "ひらがなカタカナ", "繁體中文", "Привет мир", "Ελληνικά",
  "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "ქართული", "Հայերեն", "ᏣᎳᎩ", "ትግርኛ",
  "Tiếng Việt", "ⓐⓑⓒ", "𝐀𝐁𝐂𝔸𝔹", "𝓗𝓮𝓵𝓵𝓸", "ﬁﬂ", "Ⅻ", "½¾", "㎏㎞", "①②③", "ｆｕｌｌｗｉｄｔｈ", "ＡＢＣ１２３"];
const EMOJI = ["😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "👩🏾‍💻", "🏳️‍🌈", "🏴‍☠️", "❤️", "❤", "🇫🇷", "🇯🇵🇺🇸", "1️⃣", "#️⃣",
  "🤷‍♀️", "🧑‍🤝‍🧑", "😶‍🌫️", "🫠", "🦙", "✨", "☃", "⌚", "🀄", "🃏", "💯"];
const COMBINING = ["e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "A\u030A", "\u0301", "\u0338", "ｶ\u3099",
  "क\u093f", "\u0915\u094d\u0937", "Z\u0351\u0352\u0353\u0354", "i\u0307", "\u1100\u1161\u11a8", "\u0041\u20dd"];
const SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00a0", "\u3000", "\u2009",
  "\u200b", "\u2028", "\u000b", "\u000c", " \t \n", "\u00a0\u00a0", "\n\n\n   "];
const SPECIAL = ["<|eot_id|>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|im_start|>",
  "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "<unk>", "<bos>", "<eos>", "<pad>", "<start_of_turn>",
  "<end_of_turn>", "<think>", "</think>", "<tool_call>", "[INST]", "[/INST]", "<mask>", "<|eot_id", "eot_id|>",
  "< s>", "<S>", "<|fim_prefix|>", "<|reserved_special_token_5|>", "<unused0>", "<start_of_image>", "<|vision_start|>"];
const PUNCT = [".", ",", "!", "?", ";", ":", "'", "\"", "(", ")", "[", "]", "{", "}", "<", ">", "/", "\\", "|",
  "-", "_", "=", "+", "*", "&", "^", "%", "$", "#", "@", "~", "`", "''", "``", " '", "' ", "'s", "'S", "'ll",
  "'LL", "'re", "'Ve", "'d", "'M", "'t", "n't", "\"\"\"", "```", "->", "=>", "::", "!=", "<=", "...", "??", "!!"];
const CODE = ["def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
  "if x == 1 and y != 2:", "console.log(`${a}`);", "SELECT * FROM t WHERE id = 42;", "<div class=\"x\">&amp;</div>",
  "{\"key\": [1, 2.5, null]}", "  - item\n  - item2", "# Title\n\n**bold** _it_", "$ ls -la | grep foo"];

function digits(r) {
  const len = 1 + Math.floor(r() * 14);
  let s = "";
  for (let i = 0; i < len; i++) s += String.fromCharCode(48 + Math.floor(r() * 10));
  return s;
}

function randomCodePoint(r) {
  // Anywhere in the BMP or the first astral planes, skipping surrogates (not representable in UTF-8).
  for (;;) {
    const cp = r() < 0.8 ? Math.floor(r() * 0x10000) : 0x10000 + Math.floor(r() * 0x30000);
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    return String.fromCodePoint(cp);
  }
}

// transformers.js refuses to decode an empty list; the pack records "" for it.
function decode(tok, ids, skip) { return ids.length ? tok.decode(ids, { skip_special_tokens: skip }) : ""; }

function pick(r, a) { return a[Math.floor(r() * a.length)]; }

function fragment(r) {
  const k = r();
  if (k < 0.2) return pick(r, WORDS);
  if (k < 0.3) return pick(r, SCRIPTS);
  if (k < 0.38) return pick(r, EMOJI);
  if (k < 0.45) return pick(r, COMBINING);
  if (k < 0.58) return pick(r, SPACES);
  if (k < 0.65) return pick(r, SPECIAL);
  if (k < 0.75) return pick(r, PUNCT);
  if (k < 0.82) return digits(r);
  if (k < 0.85) return pick(r, CODE);
  if (k < 0.93) { let s = ""; const n = 1 + Math.floor(r() * 4); for (let i = 0; i < n; i++) s += randomCodePoint(r); return s; }
  if (k < 0.96) return pick(r, WORDS).repeat(1 + Math.floor(r() * 6));
  return String.fromCharCode(Math.floor(r() * 32));  // control characters incl. NUL
}

// GLIA_DIFF_COUNT / GLIA_DIFF_SEED: a larger or different set for a one-off stress run (the
// committed files use the defaults, which test_tokenizer expects).
function strings() {
  const r = rng(Number(process.env.GLIA_DIFF_SEED || 20240726));
  const count = Number(process.env.GLIA_DIFF_COUNT || 300);
  const out = [];
  // Fixed edge cases first.
  out.push("", " ", "  ", "\n", " \n", "\t", "\u00a0", "\u3000", "a", " a", "  a", "\ta", "\na", "1234567",
    "12345678901234567890", " 1234567 ", "1 2 3", "3.14159265358979", "'s 'LL 'll 'Re 'VE 'd 'M 't", "Don'T I'LL",
    "a".repeat(500), "ab".repeat(300), "日".repeat(200), "😀".repeat(50), "👨‍👩‍👧‍👦".repeat(10), " ".repeat(100),
    "\n".repeat(50), "supercalifragilisticexpialidocious".repeat(20), "x" + "\u0301".repeat(60),
    "<|eot_id|><|eot_id|>", "<s><s></s>", " <s> ", "<bos>text<eos>", "<|im_start|>user\nhi<|im_end|>\n",
    "<start_of_turn>model\n", "<think>\n\n</think>\n\n", "Hello<|eot_id|>world", "a<|begin_of_text|>", "<|eot_id|> ",
    "\ufeffBOM", "\ufffd\ufffd", "\u0000\u0001\u007f", "\ud83d\ude00".normalize("NFD"), "e\u0301\u0302 a\u0308",
    "한국어".normalize("NFD"), "Å Å Å", "ﬁ ﬀ", "\u2028\u2029", "\r\n\r\n", " \r\n \r\n", "\t\n\r\u00a0\u3000");
  while (out.length < count) {
    const n = 1 + Math.floor(r() * 10);
    let s = r() < 0.25 ? " ".repeat(1 + Math.floor(r() * 3)) : "";
    for (let i = 0; i < n; i++) {
      s += fragment(r);
      if (r() < 0.5) s += " ";
    }
    out.push(s);
  }
  return out;
}

function checkPack() {
  for (const name of NAMES) {
    const { tj, tc } = loadJSON(name);
    const tok = load(tj, tc);
    const rows = fs.readFileSync(path.join(pack, name, "expected.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    let bad = 0;
    for (const row of rows) {
      const ids = tok.encode(row.text, { add_special_tokens: row.add_special });
      const dec = decode(tok, ids, false);
      const decSkip = decode(tok, ids, true);
      if (JSON.stringify(ids) !== JSON.stringify(row.ids) || dec !== row.decoded || decSkip !== row.decoded_skip_special) bad++;
    }
    console.log(`pack ${name}: ${rows.length - bad}/${rows.length} rows reproduced`);
    if (bad) process.exitCode = 1;
  }
}

function main() {
  if (process.argv.includes("--check-pack")) checkPack();
  const texts = strings();
  fs.mkdirSync(path.join(here, "diff"), { recursive: true });
  for (const name of NAMES) {
    const { tj, tc } = loadJSON(name);
    const tok = load(tj, tc);
    const literal = load({ ...tj, added_tokens: tj.added_tokens.filter((t) => !t.special) }, tc);
    const lines = [];
    for (const text of texts) {
      for (const parse_special of [true, false]) {
        for (const add_special of [false, true]) {
          const ids = (parse_special ? tok : literal).encode(text, { add_special_tokens: add_special });
          lines.push(JSON.stringify({
            text, add_special, parse_special, ids,
            decoded: decode(tok, ids, false),
            decoded_skip_special: decode(tok, ids, true),
          }));
        }
      }
    }
    fs.writeFileSync(path.join(here, "diff", name + ".jsonl"), lines.join("\n") + "\n");
    console.log(`${name}: ${lines.length} rows`);
  }
}

main();
