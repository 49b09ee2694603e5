// The packed weight step blobs decode to the checkpoint's values with each
// MMA atom's own recipe, emulated here from the atom's source (which words a
// lane reads, how it turns them into its MMA fragment): independent of the
// layout table (moe_weight_layouts.cuh) the packer and the transform share.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "oracle/mx_format.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/weight_packing.hpp"
#include "templates/moe_weight_layouts.cuh"

using namespace moejit;

namespace {
struct Checkpoint {
  int experts, rows, k;
  std::vector<std::uint8_t> payload, scales;

  double value(int e, int src_row, int kk) const {
    const std::uint8_t byte = payload[(std::size_t(e) * rows + src_row) * (k / 2) + kk / 2];
    return mx::e2m1_value(kk % 2 ? byte >> 4 : byte & 0xF) *
           mx::ue8m0_value(scales[(std::size_t(e) * rows + src_row) * (k / 32) + kk / 32]);
  }
};

Checkpoint random_checkpoint(int experts, int rows, int k, int max_code, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Checkpoint c{experts, rows, k, std::vector<std::uint8_t>(std::size_t(experts) * rows * k / 2),
               std::vector<std::uint8_t>(std::size_t(experts) * rows * k / 32)};
  for (auto& b : c.payload) b = static_cast<std::uint8_t>(rng());
  for (auto& s : c.scales) s = static_cast<std::uint8_t>(rng() % (max_code + 1));
  return c;
}

// The packed shape of a checkpoint projection with no padding: W1 (`w1`, gate/up rows paired per tile) or W2.
contract::ProjectionShape unpadded(const Checkpoint& c, bool w1) {
  return {c.rows, c.k, c.rows, c.k, w1, false};
}

int source_row(int n, int rows, bool interleave) {
  if (!interleave) return n;
  const int i = (n / 64) * 32 + ((n % 64) / 16) * 8 + n % 8;  // gate i in rows r < 8 of a 16-row slice, up i after
  return (n % 16) < 8 ? i : rows / 2 + i;
}

std::uint32_t word_at(const std::vector<std::uint8_t>& blob, std::size_t byte_offset) {
  std::uint32_t w;
  std::memcpy(&w, blob.data() + byte_offset, 4);
  return w;
}

// E4M3 byte -> value (bias 7, subnormals below exponent 1).
double e4m3_value(std::uint32_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return (b & 0x80) ? -v : v;
}

// Walks every step blob of a packed projection: (expert, 64-row tile, K128 block, step bytes offset).
template <class F>
void for_each_step(const Checkpoint& c, F f) {
  for (int e = 0; e < c.experts; ++e)
    for (int mt = 0; mt < c.rows / 64; ++mt)
      for (int kb = 0; kb < c.k / 128; ++kb) f(e, mt, kb, contract::weight_step_offset(e, mt, kb, c.rows, c.k));
}
}  // namespace

TEST_CASE("fast sm_90a layout: each lane's words become its wgmma e4m3 A fragment, worth E2M1 * 2^-6") {
  // moe_atom_sm90_fp8.cuh: consumer warp w, lane (g, t) reads 16 bytes at w*1024 + lane*16 and at +512:
  // words[2j] (row g) and words[2j+1] (row g+8) of K32 block j; a0/a1 = word & 0x9C9C9C9C hold
  // k = 4t + b in byte b, a2/a3 = ((word << 2) & 0x8C8C8C8C) | ((word >> 2) & 0x10101010) hold k = 16 + 4t + b.
  for (bool interleave : {false, true}) {
    CAPTURE(interleave);
    const Checkpoint c = random_checkpoint(2, 128, 256, 254, 0x5EEDu + interleave);
    const auto blob =
        runtime::pack_projection(c.payload, c.scales, c.experts, unpadded(c, interleave), contract::kLayoutSm90Fp8);
    int mismatches = 0, checked = 0;
    for_each_step(c, [&](int e, int mt, int kb, long long step) {
      for (int warp = 0; warp < 4; ++warp)
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4;
          std::uint32_t words[8];
          for (int i = 0; i < 8; ++i)
            words[i] = word_at(blob, step + warp * 1024 + lane * 16 + (i / 4) * 512 + 4 * (i % 4));
          for (int j = 0; j < 4; ++j)
            for (int half = 0; half < 2; ++half) {  // row g, then g + 8
              const std::uint32_t x = words[2 * j + half];
              const std::uint32_t regs[2] = {x & 0x9C9C9C9Cu, ((x << 2) & 0x8C8C8C8Cu) | ((x >> 2) & 0x10101010u)};
              const int row = mt * 64 + 16 * warp + g + 8 * half;
              const int src = source_row(row, c.rows, interleave);
              const std::uint32_t scale_word = word_at(blob, step + 4096 + 4 * (16 * warp + g + 8 * half));
              for (int r = 0; r < 2; ++r)
                for (int b = 0; b < 4; ++b) {
                  const int kk = kb * 128 + 32 * j + 16 * r + 4 * t + b;
                  const int code = (scale_word >> (8 * j)) & 0xFF;
                  const double got = e4m3_value((regs[r] >> (8 * b)) & 0xFF) * 64.0 * mx::ue8m0_value(code);
                  mismatches += got != c.value(e, src, kk);
                  ++checked;
                }
            }
        }
    });
    CHECK(checked == c.experts * c.rows * c.k);  // every weight exactly once
    CHECK(mismatches == 0);
  }
}

TEST_CASE("exact sm_90a layout: the atom's BF16 pair recipe decodes to E2M1 * 2^(s-127)") {
  // moe_atom_sm90_bf16.cuh: lane (g, t) of warp w reads the 16 bytes at row * 64 + t * 16 (rows g and g+8 of
  // its slice); word j covers K32 block j as four pairs, each an AND (and rotates) away from a BF16x2 with the
  // raw pattern E2M1 * 2^-126, which the multiplier 2^(s-1) turns into E2M1 * 2^(s-127).
  const Checkpoint c = random_checkpoint(2, 128, 256, 128, 0xB16u);
  const auto blob =
      runtime::pack_projection(c.payload, c.scales, c.experts, unpadded(c, true), contract::kLayoutSm90Bf16);
  int mismatches = 0;
  long long checked = 0;
  for_each_step(c, [&](int e, int mt, int kb, long long step) {
    for (int n = 0; n < 64; ++n)
      for (int t = 0; t < 4; ++t)
        for (int j = 0; j < 4; ++j) {
          const std::uint32_t q = word_at(blob, step + n * 64 + t * 16 + 4 * j);
          const int code = (word_at(blob, step + 4096 + 4 * n) >> (8 * j)) & 0xFF;
          constexpr std::uint32_t kPair = 0x81C081C0u;
          const std::uint32_t pairs[4] = {q & kPair, std::rotr(q, 4) & kPair, std::rotr(q, 10) & kPair,
                                          (std::rotr(q, 6) & 0x81808180u) | (std::rotr(q, 14) & 0x00400040u)};
          const int pair_k[4] = {32 * j + 2 * t, 32 * j + 2 * t + 8, 32 * j + 16 + 2 * t, 32 * j + 24 + 2 * t};
          const int src = source_row(mt * 64 + n, c.rows, true);
          for (int p = 0; p < 4; ++p)
            for (int h = 0; h < 2; ++h) {
              const double got = mx::bf16_value(h ? pairs[p] >> 16 : pairs[p] & 0xFFFF) * std::ldexp(1.0, code - 1);
              mismatches += got != c.value(e, src, kb * 128 + pair_k[p] + h);
              ++checked;
            }
        }
  });
  CHECK(checked == c.experts * c.rows * c.k);  // every weight once: the check ran
  CHECK(mismatches == 0);
}

TEST_CASE("sm_120a layout: nibbles land in the m16n8k32 A registers' byte containers") {
  // moe_atom_sm120.cuh's expand_e2m1_word: nibbles 0..3 -> a0 (k = 4t..4t+3 of the K32 block), 4..7 -> a2
  // (k = 16+4t..), each code at bits 5..2 of its byte; word j of lane column t covers K32 block j.
  const Checkpoint c = random_checkpoint(1, 128, 256, 254, 0x120u);
  const auto blob =
      runtime::pack_projection(c.payload, c.scales, c.experts, unpadded(c, false), contract::kLayoutSm120);
  int mismatches = 0;
  long long checked = 0;
  for_each_step(c, [&](int e, int mt, int kb, long long step) {
    for (int n = 0; n < 64; ++n)
      for (int t = 0; t < 4; ++t)
        for (int j = 0; j < 4; ++j) {
          const std::uint32_t q = word_at(blob, step + n * 64 + t * 16 + 4 * j);
          for (int reg = 0; reg < 2; ++reg)
            for (int byte = 0; byte < 4; ++byte) {
              const std::uint32_t code = (q >> (4 * (4 * reg + byte))) & 0xF;
              const int kk = kb * 128 + 32 * j + 16 * reg + 4 * t + byte;
              const std::uint8_t src = c.payload[std::size_t(e * c.rows + mt * 64 + n) * (c.k / 2) + kk / 2];
              mismatches += code != std::uint32_t(kk % 2 ? src >> 4 : src & 0xF);
              ++checked;
            }
        }
  });
  CHECK(checked == c.experts * c.rows * c.k);  // every weight once: the check ran
  CHECK(mismatches == 0);
}

TEST_CASE("step blobs: a 128-row pair's two steps sit side by side for each K128 block") {
  // One TMA box of weight_box_rows(2) rows covers tiles 2p and 2p+1 of a K128 block.
  CHECK(contract::weight_step_offset(0, 1, 0, 256, 256) - contract::weight_step_offset(0, 0, 0, 256, 256) ==
        contract::kWeightStepBytes);
  CHECK(contract::weight_step_offset(0, 0, 1, 256, 256) - contract::weight_step_offset(0, 0, 0, 256, 256) ==
        2 * contract::kWeightStepBytes);
  CHECK(contract::weight_box_rows(2) * contract::kWeightMapRowBytes == 2 * contract::kWeightStepBytes);
  CHECK(contract::weight_step_offset(1, 0, 0, 256, 256) == 2LL * 2 * 2 * contract::kWeightStepBytes);
  // The transform walks steps in memory order through weight_step_at: every step exactly once, at its offset.
  const int experts = 3, rows = 384, k = 512;
  const long long steps = 1LL * experts * (rows / 64) * (k / 128);
  std::vector<int> seen(steps, 0);
  for (long long i = 0; i < steps; ++i) {
    const contract::WeightStep s = contract::weight_step_at(i, rows, k);
    REQUIRE(s.expert < experts);
    REQUIRE(s.mt < rows / 64);
    REQUIRE(s.kb < k / 128);
    CHECK(contract::weight_step_offset(s.expert, s.mt, s.kb, rows, k) == i * contract::kWeightStepBytes);
    ++seen[(s.expert * (rows / 64) + s.mt) * (k / 128) + s.kb];
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == steps);
}

TEST_CASE("padding and gpt-oss's interleaved gate/up: every packed code is the checkpoint's or zero padding") {
  // W1 of I = 288 (2I = 576 rows, gate i at row 2i and up i at row 2i + 1) over K = H = 544, packed as
  // 2 * 384 rows x K 768; and W2 (H = 544 rows, K = I = 288) packed as 768 x 384: the shapes a layer of that
  // config builds (codegen::projection_shape). Decoded through the sm_120a layout (a code's nibble as it is:
  // see the test above), independently of checkpoint_row.
  const int experts = 2, inter = 288, hidden = 544, inter_p = 384, hidden_p = 768;
  codegen::MoeConfig config;
  config.experts = experts;
  config.hidden = hidden;
  config.intermediate = inter;
  config.gate_up = codegen::GateUp::interleaved;
  for (bool w1 : {true, false}) {
    CAPTURE(w1);
    const int src_rows = w1 ? 2 * inter : hidden, src_k = w1 ? hidden : inter;
    const contract::ProjectionShape shape =
        codegen::projection_shape(config, w1 ? codegen::Projection::w1 : codegen::Projection::w2);
    REQUIRE(shape.rows == (w1 ? 2 * inter_p : hidden_p));
    REQUIRE(shape.k == (w1 ? hidden_p : inter_p));
    REQUIRE((shape.src_rows == src_rows && shape.src_k == src_k && shape.w1 == w1));
    const Checkpoint c = random_checkpoint(experts, src_rows, src_k, 254, 0x6705u + w1);
    const auto blob = runtime::pack_projection(c.payload, c.scales, experts, shape, contract::kLayoutSm120);
    REQUIRE(blob.size() == std::size_t(experts) * (shape.rows / 64) * (shape.k / 128) * contract::kWeightStepBytes);
    int mismatches = 0, real = 0;
    for (int e = 0; e < experts; ++e)
      for (int n = 0; n < shape.rows; ++n) {
        // Packed row n: tile n / 64 pairs gate rows (r < 8 of each 16-row slice) with their up rows (r >= 8).
        int src = -1;
        if (w1) {
          const int i = (n / 64) * 32 + ((n % 64) / 16) * 8 + n % 8;
          if (i < inter) src = 2 * i + ((n % 16) < 8 ? 0 : 1);
        } else if (n < hidden) {
          src = n;
        }
        for (int kb = 0; kb < shape.k / 128; ++kb) {
          const long long step = contract::weight_step_offset(e, n / 64, kb, shape.rows, shape.k);
          const std::uint32_t scale_word = word_at(blob, step + 4096 + 4 * (n % 64));
          for (int j = 0; j < 4; ++j) {
            const int block = kb * 4 + j;
            const bool live = src >= 0 && block < src_k / 32;
            const std::uint32_t want = live ? c.scales[(std::size_t(e) * src_rows + src) * (src_k / 32) + block] : 0;
            mismatches += ((scale_word >> (8 * j)) & 0xFF) != want;
          }
          for (int t = 0; t < 4; ++t)
            for (int j = 0; j < 4; ++j) {
              const std::uint32_t q = word_at(blob, step + (n % 64) * 64 + t * 16 + 4 * j);
              for (int reg = 0; reg < 2; ++reg)
                for (int byte = 0; byte < 4; ++byte) {
                  const std::uint32_t code = (q >> (4 * (4 * reg + byte))) & 0xF;
                  const int kk = kb * 128 + 32 * j + 16 * reg + 4 * t + byte;
                  std::uint32_t want = 0;
                  if (src >= 0 && kk < src_k) {
                    const std::uint8_t b = c.payload[(std::size_t(e) * src_rows + src) * (src_k / 2) + kk / 2];
                    want = kk % 2 ? b >> 4 : b & 0xF;
                    ++real;
                  }
                  mismatches += code != want;
                }
            }
        }
      }
    CHECK(real == experts * src_rows * src_k);  // every checkpoint code lands exactly once
    CHECK(mismatches == 0);
  }
}

// The packed-weights GPU case left subnormal_weight_scales at its default (true): that layer planned no token
// frame, and its bytes differed from the checkpoint-built layer's on some seeds
// (bench/results/2026-12-06-h100-s73-packed-case-and-dispatch.md).
TEST_CASE("host-packed weights on the device keep what the packer found: top code, atom, subnormal scales") {
  runtime::PackedWeightsHost host;
  host.top_scale_code = 121;
  host.atom = "sm90-fp8-wgmma";
  for (const bool subnormal : {false, true}) {
    host.subnormal_weight_scales = subnormal;
    const runtime::PackedWeightsDevice d = runtime::packed_on_device(host, 0x1000, 0x2000, 0x3000, 0x4000);
    CHECK(d.subnormal_weight_scales == subnormal);
    CHECK(d.top_scale_code == 121);
    CHECK(d.atom == host.atom);
    CHECK((d.w1 == 0x1000 && d.w2 == 0x2000 && d.b1 == 0x3000 && d.b2 == 0x4000));
  }
  CHECK(runtime::PackedWeightsDevice{}.subnormal_weight_scales);  // unknown: the kernels exact for any weights
}
