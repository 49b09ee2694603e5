#pragma once
// Where each E2M1 code of a weight step blob lives, per MMA atom: the one
// definition the weight transform kernel packs by and the host's CPU twin and
// tests read. A step blob's payload is 1024 words; word `w` holds 8 codes, and
// code slot i of word w is (tile row, k within the K128 block, bit position of
// each of the code's 4 bits: m, e0, e1, s). The atoms document how their
// inner loop reads the words (moe_atom_sm90_bf16.cuh, moe_atom_sm90_fp8.cuh,
// moe_atom_sm120.cuh).

#include "moe_contract.cuh"

namespace moejit {
namespace contract {

enum WeightLayout : int {
  kLayoutSm90Bf16 = 0,  // bit scatter: a BF16 pair is an AND and a rotate away
  kLayoutSm120 = 1,     // nibbles in mma.sync kind::mxf8f6f4 A order
  kLayoutSm90Fp8 = 2,   // E4M3 bit placement in wgmma A order
};

MOEJIT_HD constexpr int weight_layout_of(int path) {
  return path == kPathSm90Fp8 ? kLayoutSm90Fp8 : (path == kPathSm120 ? kLayoutSm120 : kLayoutSm90Bf16);
}

struct CodeSlot {
  int row;     // 0..63 within the tile
  int k;       // 0..127 within the K128 block
  int bit[4];  // positions of m, e0, e1, s in the word
};

MOEJIT_HD constexpr CodeSlot code_slot(int layout, int word, int slot) {
  CodeSlot c{};
  if (layout == kLayoutSm90Fp8) {
    // Consumer warp, half, lane, word of the lane's 16 bytes.
    const int warp = word / 256, half = (word / 128) % 2, lane = (word / 4) % 32, q = word % 4;
    const int j = 2 * half + q / 2, t = lane % 4, b = slot % 4;
    c.row = 16 * warp + lane / 4 + 8 * (q % 2);
    if (slot < 4) {
      c.k = 32 * j + 4 * t + b;
      c.bit[0] = 8 * b + 2, c.bit[1] = 8 * b + 3, c.bit[2] = 8 * b + 4, c.bit[3] = 8 * b + 7;
    } else {
      c.k = 32 * j + 16 + 4 * t + b;
      c.bit[0] = 8 * b + 0, c.bit[1] = 8 * b + 1, c.bit[2] = 8 * b + 6, c.bit[3] = 8 * b + 5;
    }
    return c;
  }
  // Row-major 64-byte rows: word 4t + j of row n covers lane column t and K32 block j.
  c.row = word / 16;
  const int t = (word % 16) / 4, j = word % 4;
  if (layout == kLayoutSm120) {
    c.k = 32 * j + 4 * t + slot % 4 + 16 * (slot / 4);
    for (int f = 0; f < 4; ++f) c.bit[f] = 4 * slot + f;
    return c;
  }
  // kLayoutSm90Bf16: slot = 2 * pair + element; see moe_atom_sm90_bf16.cuh for the table's reasoning.
  constexpr int kBits[4][2][4] = {{{6, 7, 8, 15}, {22, 23, 24, 31}},
                                  {{10, 11, 12, 19}, {26, 27, 28, 3}},
                                  {{16, 17, 18, 25}, {0, 1, 2, 9}},
                                  {{20, 13, 14, 21}, {4, 29, 30, 5}}};
  const int pair = slot / 2, elem = slot % 2;
  const int pair_k = 32 * j + 2 * t + (pair % 2) * 8 + (pair / 2) * 16;
  c.k = pair_k + elem;
  for (int f = 0; f < 4; ++f) c.bit[f] = kBits[pair][elem][f];
  return c;
}

// A projection as packed (rows x k, padded) and as the checkpoint holds it.
// W1: rows 2I, K = H, and the checkpoint's gate/up row order: halves (gate i
// at row i, up i at row I + i) or interleaved (gpt-oss: rows 2i and 2i + 1).
struct ProjectionShape {
  int rows, k;          // packed: 2 * padded I or padded H, and padded H or padded I
  int src_rows, src_k;  // the checkpoint's
  bool w1, gate_up_interleaved;
};

// The checkpoint row that packed row n holds, or -1 for a padding row (zero
// codes, scale code 0). W1 pairs gate and up rows in every 64-row tile: rows
// r < 8 of each 16-row slice gate and r >= 8 up, so the activation's pairs
// and the requantization block of 32 intermediate columns stay in one tile.
MOEJIT_HD constexpr int checkpoint_row(int n, ProjectionShape s) {
  if (!s.w1) return n < s.src_rows ? n : -1;
  const int tile = n / 64, slice = (n % 64) / 16, r = n % 16;
  const int i = tile * 32 + slice * 8 + r % 8, inter = s.src_rows / 2;
  const int up = r < 8 ? 0 : 1;
  if (i >= inter) return -1;
  return s.gate_up_interleaved ? 2 * i + up : up * inter + i;
}

// The largest UE8M0 weight scale code an atom supports. The exact path folds
// the scale into BF16 pattern arithmetic that holds up to 2^1 (|w| < 16); the
// others apply every finite code (255 is NaN in UE8M0).
MOEJIT_HD constexpr int max_weight_scale_code(int path) {
  return path == kPathSm90Bf16 ? 128 : 254;
}

// Whether a checkpoint K32 block (its 16 payload bytes, two E2M1 codes each)
// holds a nonzero value: a magnitude bit in either nibble (-0 is 0x8). A block
// of scale code 0 that does needs the scale's 2^-127 (the weight transform
// kernel and the CPU packer both ask this: MoeCodegenOptions::subnormal_weight_scales).
MOEJIT_HD constexpr bool block_has_value(const unsigned char* payload16) {
  bool any = false;
  for (int b = 0; b < 16; ++b) any |= (payload16[b] & 0x77u) != 0;
  return any;
}

}  // namespace contract
}  // namespace moejit
