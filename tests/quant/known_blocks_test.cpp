// Hand-built blocks with values known from the format definitions (ggml-common.h block layouts and
// the dequantization formulas of ggml-quants.c): each block is assembled byte by byte here and its
// expected values are computed from the formula, independently of the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "quant/types.h"
#include "quant_test_util.h"

namespace glia {
namespace {

// fp16 bit patterns of a few exact values.
constexpr uint16_t h_0_125 = 0x3000, h_0_25 = 0x3400, h_0_5 = 0x3800, h_1 = 0x3C00, h_2 = 0x4000,
                   h_minus_1 = 0xBC00;

struct known_block {
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // expected decoded values
};

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = uint8_t(v & 0xFF);
  b[at + 1] = uint8_t(v >> 8);
}

known_block q4_0_block() {
  known_block k{std::vector<uint8_t>(18), std::vector<double>(32)};
  put16(k.bytes, 0, h_0_5);
  for (int j = 0; j < 16; ++j) {
    k.bytes[2 + j] = uint8_t(j | (15 - j) << 4);  // element j: low nibble, element j+16: high nibble
    k.values[j] = 0.5 * (j - 8);
    k.values[16 + j] = 0.5 * ((15 - j) - 8);
  }
  return k;
}

known_block q4_1_block() {
  known_block k{std::vector<uint8_t>(20), std::vector<double>(32)};
  put16(k.bytes, 0, h_0_5);
  put16(k.bytes, 2, h_minus_1);
  for (int j = 0; j < 16; ++j) {
    k.bytes[4 + j] = uint8_t(j | (15 - j) << 4);
    k.values[j] = 0.5 * j - 1;
    k.values[16 + j] = 0.5 * (15 - j) - 1;
  }
  return k;
}

// 5-bit codes c_e = 7e mod 32 (every code once): low nibbles as Q4_0, bit 4 of element e in bit e
// of the little-endian 32-bit qh.
void fill_q5(std::vector<uint8_t>& b, size_t qh_at, size_t qs_at, std::vector<int>& codes) {
  codes.resize(32);
  uint32_t qh = 0;
  for (int e = 0; e < 32; ++e) {
    codes[e] = (7 * e) % 32;
    qh |= uint32_t(codes[e] >> 4) << e;
  }
  for (int j = 0; j < 16; ++j) b[qs_at + j] = uint8_t((codes[j] & 15) | (codes[j + 16] & 15) << 4);
  for (int i = 0; i < 4; ++i) b[qh_at + i] = uint8_t(qh >> (8 * i));
}

known_block q5_0_block() {
  known_block k{std::vector<uint8_t>(22), std::vector<double>(32)};
  put16(k.bytes, 0, h_1);
  std::vector<int> c;
  fill_q5(k.bytes, 2, 6, c);
  for (int e = 0; e < 32; ++e) k.values[e] = c[e] - 16;
  return k;
}

known_block q5_1_block() {
  known_block k{std::vector<uint8_t>(24), std::vector<double>(32)};
  put16(k.bytes, 0, h_0_25);
  put16(k.bytes, 2, h_2);
  std::vector<int> c;
  fill_q5(k.bytes, 4, 8, c);
  for (int e = 0; e < 32; ++e) k.values[e] = 0.25 * c[e] + 2;
  return k;
}

known_block q8_0_block() {
  known_block k{std::vector<uint8_t>(34), std::vector<double>(32)};
  put16(k.bytes, 0, h_0_5);
  for (int e = 0; e < 32; ++e) {
    const int q = (e - 16) * 7;
    k.bytes[2 + e] = uint8_t(int8_t(q));
    k.values[e] = 0.5 * q;
  }
  return k;
}

known_block q8_1_block() {
  known_block k{std::vector<uint8_t>(36), std::vector<double>(32)};
  put16(k.bytes, 0, h_0_25);
  put16(k.bytes, 2, 0x1234);  // s only feeds dot products, never decoding
  for (int e = 0; e < 32; ++e) {
    const int q = 127 - 8 * e;
    k.bytes[4 + e] = uint8_t(int8_t(q));
    k.values[e] = 0.25 * q;
  }
  return k;
}

// The 2-bit code of element e = 128h + 32s + l sits in bits 2s..2s+1 of byte 32h + l.
void put_two_bit(std::vector<uint8_t>& b, size_t qs_at, int e, int code) {
  const int h = e / 128, s = (e % 128) / 32, l = e % 32;
  b[qs_at + 32 * h + l] |= uint8_t(code << (2 * s));
}

known_block q2_k_block() {
  // scales[16] @0, qs[64] @16, d @80, dmin @82; x = d*(sc & 15)*q - dmin*(sc >> 4), groups of 16.
  known_block k{std::vector<uint8_t>(84), std::vector<double>(256)};
  put16(k.bytes, 80, h_1);
  put16(k.bytes, 82, h_0_5);
  for (int g = 0; g < 16; ++g) k.bytes[g] = uint8_t(g | (15 - g) << 4);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 16, q = (e / 3) % 4;
    put_two_bit(k.bytes, 16, e, q);
    k.values[e] = 1.0 * g * q - 0.5 * (15 - g);
  }
  return k;
}

known_block q3_k_block() {
  // hmask[32] @0, qs[64] @32, scales[12] @96, d @108; x = d*(S - 32)*(q - 4), groups of 16.
  known_block k{std::vector<uint8_t>(110), std::vector<double>(256)};
  put16(k.bytes, 108, h_0_5);
  int S[16];
  for (int g = 0; g < 16; ++g) {
    S[g] = (5 * g + 3) % 64;
    // Low nibble: byte g (g < 8) or high nibble of byte g-8; top 2 bits: byte 8 + g%4, bits 2*(g/4).
    if (g < 8)
      k.bytes[96 + g] |= uint8_t(S[g] & 15);
    else
      k.bytes[96 + g - 8] |= uint8_t((S[g] & 15) << 4);
    k.bytes[96 + 8 + g % 4] |= uint8_t((S[g] >> 4) << (2 * (g / 4)));
  }
  for (int e = 0; e < 256; ++e) {
    const int q = (3 * e) % 8;
    put_two_bit(k.bytes, 32, e, q & 3);
    if (q & 4) k.bytes[e % 32] |= uint8_t(1 << (e / 32));  // hmask bit e/32 of byte e%32
    k.values[e] = 0.5 * (S[e / 16] - 32) * (q - 4);
  }
  return k;
}

// Q4_K/Q5_K 6-bit scale (sc) and min (m) codes of 8 groups in 12 bytes.
void put_scale_min(std::vector<uint8_t>& b, size_t at, int g, int sc, int m) {
  if (g < 4) {
    b[at + g] |= uint8_t(sc);
    b[at + g + 4] |= uint8_t(m);
  } else {
    b[at + g + 4] |= uint8_t((sc & 15) | (m & 15) << 4);
    b[at + g - 4] |= uint8_t((sc >> 4) << 6);
    b[at + g] |= uint8_t((m >> 4) << 6);
  }
}

// Element e = 64h + l (l < 32) is the low nibble of qs[32h + l]; 64h + 32 + l the high nibble.
void put_nibble_k(std::vector<uint8_t>& b, size_t qs_at, int e, int code) {
  const size_t at = qs_at + 32 * (e / 64) + e % 32;
  b[at] |= uint8_t((e % 64) < 32 ? code : code << 4);
}

known_block q4_k_block() {
  // d @0, dmin @2, scales[12] @4, qs[128] @16; x = d*sc*q - dmin*m, groups of 32.
  known_block k{std::vector<uint8_t>(144), std::vector<double>(256)};
  put16(k.bytes, 0, h_0_5);
  put16(k.bytes, 2, 0x3400);  // 0.25
  for (int g = 0; g < 8; ++g) put_scale_min(k.bytes, 4, g, 10 + 7 * g, 63 - 5 * g);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 32, q = (5 * e) % 16;
    put_nibble_k(k.bytes, 16, e, q);
    k.values[e] = 0.5 * (10 + 7 * g) * q - 0.25 * (63 - 5 * g);
  }
  return k;
}

known_block q5_k_block() {
  // d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48; bit 4 of element 64h + l is bit 2h of
  // qh[l], of element 64h + 32 + l bit 2h + 1.
  known_block k{std::vector<uint8_t>(176), std::vector<double>(256)};
  put16(k.bytes, 0, h_0_25);
  put16(k.bytes, 2, h_0_125);
  for (int g = 0; g < 8; ++g) put_scale_min(k.bytes, 4, g, 63 - 6 * g, 3 + 8 * g);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 32, q = (11 * e) % 32;
    put_nibble_k(k.bytes, 48, e, q & 15);
    if (q & 16) k.bytes[16 + e % 32] |= uint8_t(1 << (2 * (e / 64) + ((e % 64) < 32 ? 0 : 1)));
    k.values[e] = 0.25 * (63 - 6 * g) * q - 0.125 * (3 + 8 * g);
  }
  return k;
}

known_block q6_k_block() {
  // ql[128] @0, qh[64] @128, scales[16] (int8) @192, d @208; x = d*sc*(q - 32), groups of 16.
  known_block k{std::vector<uint8_t>(210), std::vector<double>(256)};
  put16(k.bytes, 208, h_0_125);
  for (int g = 0; g < 16; ++g) k.bytes[192 + g] = uint8_t(int8_t((g - 8) * 9));
  for (int e = 0; e < 256; ++e) {
    const int q = (13 * e) % 64;
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    k.bytes[64 * h + l + 32 * (s % 2)] |= uint8_t((q & 15) << (s < 2 ? 0 : 4));
    k.bytes[128 + 32 * h + l] |= uint8_t((q >> 4) << (2 * s));
    k.values[e] = 0.125 * ((e / 16) - 8) * 9 * (q - 32);
  }
  return k;
}

known_block q8_k_block() {
  // float d @0, qs[256] @4, bsums[16] @260 (bsums only feed dot products).
  known_block k{std::vector<uint8_t>(292), std::vector<double>(256)};
  const float d = 0.75f;
  std::memcpy(k.bytes.data(), &d, 4);
  for (int e = 0; e < 256; ++e) {
    const int q = (37 * e) % 255 - 127;
    k.bytes[4 + e] = uint8_t(int8_t(q));
    k.values[e] = 0.75 * q;
  }
  return k;
}

known_block iq4_nl_block() {
  known_block k{std::vector<uint8_t>(18), std::vector<double>(32)};
  put16(k.bytes, 0, h_0_5);
  for (int j = 0; j < 16; ++j) {
    k.bytes[2 + j] = uint8_t(j | (15 - j) << 4);
    k.values[j] = 0.5 * test::k_iq4nl[j];
    k.values[16 + j] = 0.5 * test::k_iq4nl[15 - j];
  }
  return k;
}

known_block iq4_xs_block() {
  // d @0, scales_h (u16) @2, scales_l[4] @4, qs[128] @8; group g of 32: scale (ls - 32) with the
  // low nibble of ls in scales_l[g/2] (high nibble for odd g) and its top 2 bits at bits 2g of
  // scales_h; element 32g + j (j < 16) is the low nibble of qs[16g + j], 32g + 16 + j the high one.
  known_block k{std::vector<uint8_t>(136), std::vector<double>(256)};
  put16(k.bytes, 0, h_0_25);
  uint16_t scales_h = 0;
  for (int g = 0; g < 8; ++g) {
    const int ls = 32 + (g - 4) * 7;
    k.bytes[4 + g / 2] |= uint8_t((ls & 15) << (4 * (g % 2)));
    scales_h |= uint16_t((ls >> 4) << (2 * g));
  }
  put16(k.bytes, 2, scales_h);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 32, j = e % 32, q = (7 * e + 3) % 16;
    k.bytes[8 + 16 * g + j % 16] |= uint8_t(j < 16 ? q : q << 4);
    k.values[e] = 0.25 * ((g - 4) * 7) * test::k_iq4nl[q];
  }
  return k;
}

known_block float_block(dtype t) {
  known_block k;
  if (t == dtype::f32) {
    const float v[] = {1.0f, -2.5f, 3.0e38f, 1.0e-40f};
    k.bytes.resize(sizeof v);
    std::memcpy(k.bytes.data(), v, sizeof v);
    k.values = {1.0, -2.5, double(3.0e38f), double(1.0e-40f)};
  } else if (t == dtype::f16) {
    k.bytes = {0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B, 0x01, 0x00};  // 1, -2, 65504, 2^-24
    k.values = {1.0, -2.0, 65504.0, std::ldexp(1.0, -24)};
  } else {
    k.bytes = {0x80, 0x3F, 0x40, 0xC0, 0x80, 0x7F, 0x01, 0x00};  // 1, -3, +inf, smallest subnormal
    k.values = {1.0, -3.0, INFINITY, std::ldexp(1.0, -133)};
  }
  return k;
}

const std::map<dtype, std::function<known_block()>>& builders() {
  static const std::map<dtype, std::function<known_block()>> b = {
      {dtype::f32, [] { return float_block(dtype::f32); }},
      {dtype::f16, [] { return float_block(dtype::f16); }},
      {dtype::bf16, [] { return float_block(dtype::bf16); }},
      {dtype::q4_0, q4_0_block},     {dtype::q4_1, q4_1_block},     {dtype::q5_0, q5_0_block},
      {dtype::q5_1, q5_1_block},     {dtype::q8_0, q8_0_block},     {dtype::q8_1, q8_1_block},
      {dtype::q2_k, q2_k_block},     {dtype::q3_k, q3_k_block},     {dtype::q4_k, q4_k_block},
      {dtype::q5_k, q5_k_block},     {dtype::q6_k, q6_k_block},     {dtype::q8_k, q8_k_block},
      {dtype::iq4_nl, iq4_nl_block}, {dtype::iq4_xs, iq4_xs_block},
  };
  return b;
}

TEST(KnownBlocks, EveryTableTypeHasAHandBuiltBlock) {
  for (const type_traits& t : all_types()) EXPECT_TRUE(builders().count(t.type)) << t.name;
}

TEST(KnownBlocks, DecodeToTheValuesOfTheFormula) {
  for (const auto& [type, build] : builders()) {
    const type_traits& t = type_info(type);
    SCOPED_TRACE(t.name);
    const known_block k = build();
    const int64_t n = int64_t(k.values.size());
    ASSERT_EQ(k.bytes.size(), row_bytes(t, n));
    std::vector<float> out(static_cast<size_t>(n));
    t.dequantize_row(k.bytes.data(), out.data(), n);
    for (size_t e = 0; e < out.size(); ++e) ASSERT_EQ(double(out[e]), double(float(k.values[e]))) << "element " << e;
  }
}

// An activation block of the partner type with every code 2 and the scale 1 (0.5 for Q8_K), so
// the exact dot product is 2 * scale * sum(expected weights).
std::vector<uint8_t> flat_partner_block(dtype partner, double* value) {
  std::vector<uint8_t> b;
  if (partner == dtype::q8_0) {
    b.assign(34, 2);
    put16(b, 0, h_1);
    *value = 2.0;
  } else if (partner == dtype::q8_1) {
    b.assign(36, 2);
    put16(b, 0, h_1);
    put16(b, 2, 0x5400);  // s = d * sum(q) = 64
    *value = 2.0;
  } else {
    b.assign(292, 2);
    const float d = 0.5f;
    std::memcpy(b.data(), &d, 4);
    for (int g = 0; g < 16; ++g) {  // bsums: 16 codes of 2
      b[260 + 2 * g] = 32;
      b[261 + 2 * g] = 0;
    }
    *value = 1.0;
  }
  return b;
}

TEST(KnownBlocks, DotWithAFlatActivationBlock) {
  for (const auto& [type, build] : builders()) {
    const type_traits& t = type_info(type);
    if (!t.is_quantized) continue;
    SCOPED_TRACE(t.name);
    const known_block k = build();
    double a_value = 0;
    const auto a = flat_partner_block(t.dot_type, &a_value);
    double expected = 0, magnitude = 0;
    for (double v : k.values) {
      expected += v * a_value;
      magnitude += std::fabs(v * a_value);
    }
    const float got = t.vec_dot(k.bytes.data(), a.data(), int64_t(k.values.size()));
    EXPECT_NEAR(got, expected, 1e-6 * magnitude);
  }
}

}  // namespace
}  // namespace glia
