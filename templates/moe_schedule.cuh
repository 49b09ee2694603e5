#pragma once
// The compute role's schedules, derived by every CTA from topk_ids alone, so
// no role has to run before the weights start streaming. The stream
// schedule's walk (SegmentWalker), below; the unit schedule's (UnitWalker) and
// the item schedule's (ItemWalker) after it share its routing tables and
// item shapes:
//
//  1. Routing (moe_routing.cuh): routes per expert, the active experts in
//     expert order, and the token tiles of each (ceil(count / tile_n)); all
//     CTAs compute the same tables, so they agree on every index below
//     without talking.
//  2. Work: phase 0 is GEMM1 (items = token tile x 64 * kTiles interleaved
//     gate/up rows, K = H), phase 1 GEMM2 (token tile x 64 * kTiles rows of
//     H, K = I); where kTiles does not divide the rows, a token tile's last
//     item has the rest (PhaseShape). A phase's K128 steps form one list,
//     item-major, and each step has a cost: the atom's issue cost of a step
//     with that token tile's width (Costs::kStepCost, by
//     contract::tile_class), times the item's weight (its 64-row tiles + 3:
//     PhaseShape::w_full, w_last). CTA b takes the
//     contiguous run of steps whose cost prefix starts in [b C / G,
//     (b + 1) C / G) of each phase (C the phase's cost), so every CTA issues
//     the same work (a balanced "stream-K" split): counting steps alone
//     would hand the CTAs that draw wide tiles (a hot expert, the shared
//     expert's B tokens) up to 1.3x the time of the rest. An item cut by a
//     share boundary is finished by the CTA holding its first step (its
//     owner); the later pieces, which their CTAs run first, leave partial sums.
//  3. Route lists (moe_routing.cuh, tile_routes): the token columns of an
//     item are the routes of its expert in route order (a stable sort), found
//     with a warp ballot scan.

#include "moe_contract.cuh"
#include "moe_ptx.cuh"
#include "moe_routing.cuh"

namespace moejit {

// The last a in [0, n) for which `holds` is true, where it holds for a prefix of [0, n) that includes 0 (the
// active index of a prefix-table lookup: the last a whose prefix is at most the position sought).
template <class Pred>
__device__ __forceinline__ int last_where(int n, Pred holds) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (holds(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// One contiguous piece of one item that a CTA runs.
struct Segment {
  int phase;     // 0: GEMM1, 1: GEMM2
  int a, j, mt;  // active expert index, its token tile, the item's M extent (64 * kTiles rows)
  int expert;
  int rows;    // token columns (<= tile_n)
  int k0, k1;  // K128 steps [k0, k1) of the item's kb
};

// Items per token tile (M extents of 64 * kTiles rows, the last one `rest`
// tiles: GLM5.2's 2I = 4096 rows are ten items of six tiles and one of four)
// and K128 steps per item of each phase.
template <int kHidden, int kInter, int kTiles>
struct PhaseShape {
  __host__ __device__ static constexpr int rows64(int phase) { return phase ? kHidden / 64 : 2 * kInter / 64; }
  __host__ __device__ static constexpr int mt(int phase) { return (rows64(phase) + kTiles - 1) / kTiles; }
  __host__ __device__ static constexpr int rest(int phase) { return contract::last_item_tiles(rows64(phase), kTiles); }
  __host__ __device__ static constexpr int kb(int phase) { return phase ? kInter / 128 : kHidden / 128; }
  // The 64-row tiles of item mt (derived where used: a segment field would hold a register across the loops).
  __device__ static int tiles(int phase, int item) { return item == mt(phase) - 1 ? rest(phase) : kTiles; }
  // The relative time of a step of a full item and of the last item: its tiles plus kStepFixedTiles (over
  // their common divisor). A short item leaves consumer warpgroups idle, and the ones that run it are
  // latency-bound, not faster: in the K-loop probe (bench/results/2026-12-03-h200-kloop-probe.md, its
  // G = 1, 2, 3 rows at N = 8) a step of 2 tiles on one of three warpgroups takes 0.54 of a 6-tile step, 4
  // tiles on two 0.71-0.79, where the tiles alone say 0.33 and 0.67; (t + 3) / (6 + 3) gives 0.56 and 0.78.
  // Measured on the layer: GLM5.2 B = 2 +1.5 to +2.8 points, DSV4.1-Flash within the spread
  // (bench/results/2026-12-04-h200-clock-and-step-weights.md).
  static constexpr int kStepFixedTiles = 3;
  __host__ __device__ static constexpr int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }
  __host__ __device__ static constexpr int w_div(int phase) {
    return gcd(kTiles + kStepFixedTiles, rest(phase) + kStepFixedTiles);
  }
  __host__ __device__ static constexpr int w_full(int phase) { return (kTiles + kStepFixedTiles) / w_div(phase); }
  __host__ __device__ static constexpr int w_last(int phase) { return (rest(phase) + kStepFixedTiles) / w_div(phase); }
  // A token tile's cost in units of its class's step cost.
  __host__ __device__ static constexpr long long units(int phase) {
    return (long long)kb(phase) * ((mt(phase) - 1) * w_full(phase) + w_last(phase));
  }
};

// Every division below is by a compile-time constant (the grid included):
// nvJitLink compiles relocatable code, where a division by a run-time value is
// a call to a helper, and ptxas serializes every wgmma of a kernel that calls.

// Walks the segments of one CTA's shares, phase 0 then phase 1, in order.
// Every role of the CTA walks the same sequence. Items of unequal tiles need
// the cost-weighted shares (the step-count formula would treat them alike:
// contract::last_item_runs).
// With step costs that differ (kWeighted), the share boundaries live in the dynamic SMEM at kSharesAt
// (contract::ComputeSmemLayout::shares): int [2][kGrid + 1], addressed from the constant offset so they
// hold no register across the loops. With uniform costs, share(p, b) = W b / G.
template <int kExperts, int kHidden, int kInter, int kTiles, int kTileN, int kGrid, class Costs, int kSharesAt>
struct SegmentWalker {
  using Shape = PhaseShape<kHidden, kInter, kTiles>;
  const RouteTables* t;  // (the CTA's index is read where a share starts: cta_index)
  int phase;
  long long step, end;

  // The K128 steps of a phase and the first of CTA b's share: [share(b), share(b + 1)).
  __device__ long long work(int p) const { return (long long)t->tiles * Shape::mt(p) * Shape::kb(p); }
  static constexpr bool kWeighted = !uniform_step_cost<Costs>();
  // share_of's cost into one expert is 32-bit: at most kMaxTokenTiles token tiles, none of a class above
  // kTileN's (a last, narrower tile costs no more than a full one).
  template <int kMaxTokenTiles>
  static constexpr bool costs_fit_32_bits() {
    long long most = 0;
    for (int p = 0; p < 2; ++p) {
      const long long v =
          (long long)kMaxTokenTiles * Costs::kStepCost[p][contract::tile_class(kTileN)] * Shape::units(p);
      most = v > most ? v : most;
    }
    return most < (1LL << 31);
  }
  __device__ static int* shares() {
    extern __shared__ __align__(1024) u8 smem[];
    return reinterpret_cast<int*>(smem + kSharesAt);
  }
  // An ld.shared by the table's 32-bit window address: it reads SMEM whatever address space the compiler
  // would infer for a generic pointer. (Register use measured the same as through shares().)
  __device__ long long share(int p, int block) const {
    if constexpr (!kWeighted) return (unsigned long long)work(p) * block / kGrid;
    extern __shared__ __align__(1024) u8 smem[];
    int v;
    asm volatile("ld.shared.u32 %0, [%1];"
                 : "=r"(v)
                 : "r"(smem_addr(smem) + kSharesAt + 4u * (p * (kGrid + 1) + block)));
    return v;
  }

  // The share boundaries of every CTA, by the whole block, once: computed
  // where the walker reads them (an owner gathers its item's pieces with
  // accumulators live), they cost registers.
  template <int kThreads>
  __device__ static void fill_shares(const RouteTables& t) {
    if constexpr (!kWeighted) return;
    for (int i = threadIdx.x; i < 2 * (kGrid + 1); i += kThreads) {
      const int block = i % (kGrid + 1);
      shares()[i] = int(i > kGrid ? share_of<1>(t, block) : share_of<0>(t, block));
    }
    __syncthreads();
  }
  __device__ void start_phase(int p) {
    phase = p;
    step = share(p, cta_index());
    end = share(p, cta_index() + 1);
  }
  __device__ explicit SegmentWalker(const RouteTables* tables) : t(tables) { start_phase(0); }

  // The first step whose cost prefix is at least C * block / G (C the phase's
  // cost): monotone in block, 0 for block 0 and work(p) for block G.
  template <int kPhase>
  __device__ static long long share_of(const RouteTables& t, int block) {
    constexpr long long kSteps = (long long)Shape::mt(kPhase) * Shape::kb(kPhase);  // per token tile
    constexpr long long kUnits = Shape::units(kPhase);                              // cost per token tile / class cost
    const int* cost0 = t.cost0 + kPhase * (kExperts + 1);
    if (t.n_active == 0 || block >= kGrid) return (long long)t.tiles * kSteps;
    const unsigned long long at = (unsigned long long)cost0[t.n_active] * kUnits * block / kGrid;
    const int lo = last_where(t.n_active, [&](int a) { return (unsigned long long)cost0[a] * kUnits <= at; });
    // The cost into expert lo, below its cost: < 2^31 (costs_fit_32_bits).
    const unsigned x = unsigned(at - (unsigned long long)cost0[lo] * kUnits);
    const int n = t.tile0[lo + 1] - t.tile0[lo], full = contract::tile_class(kTileN);
    const int last = contract::tile_class(t.count[lo] - (n - 1) * kTileN);
    const unsigned full_cost = unsigned((n - 1) * step_cost<Costs, kPhase>(full) * kUnits);
    const long long steps =
        x < full_cost ? steps_into<kPhase>(x, full) : (n - 1) * kSteps + steps_into<kPhase>(x - full_cost, last);
    return (long long)t.tile0[lo] * kSteps + steps;
  }
  // The first step, counted from the start of a run of token tiles of class cls, whose cost prefix is at least x.
  template <int kPhase>
  __device__ static unsigned steps_into(unsigned x, int cls) {
    switch (cls) {
      case 0: return steps_at_cost<kPhase, Costs::kStepCost[kPhase][0]>(x);
      case 1: return steps_at_cost<kPhase, Costs::kStepCost[kPhase][1]>(x);
      case 2: return steps_at_cost<kPhase, Costs::kStepCost[kPhase][2]>(x);
      default: return steps_at_cost<kPhase, Costs::kStepCost[kPhase][3]>(x);
    }
  }
  template <int kPhase, int kCost>
  __device__ static unsigned steps_at_cost(unsigned x) {
    constexpr unsigned kSteps = Shape::mt(kPhase) * Shape::kb(kPhase), kTile = kCost * unsigned(Shape::units(kPhase));
    constexpr unsigned kFull = kCost * Shape::w_full(kPhase), kLast = kCost * Shape::w_last(kPhase);
    constexpr unsigned kFullSteps = (Shape::mt(kPhase) - 1) * Shape::kb(kPhase);  // the steps of the full items
    const unsigned tiles = x / kTile;
    x -= tiles * kTile;
    return tiles * kSteps + (x <= kFullSteps * kFull ? (x + kFull - 1) / kFull
                                                     : kFullSteps + (x - kFullSteps * kFull + kLast - 1) / kLast);
  }

  __device__ bool next(Segment& s) {
    while (step >= end) {
      if (phase == 1) return false;
      start_phase(1);
    }
    s.phase = phase;
    const int tile = phase == 0 ? locate<Shape::mt(0), Shape::kb(0)>(s) : locate<Shape::mt(1), Shape::kb(1)>(s);
    step += s.k1 - s.k0;
    const int lo = last_where(t->n_active, [&](int a) { return t->tile0[a] <= tile; });
    s.a = lo;
    s.j = tile - t->tile0[lo];
    s.expert = t->active[lo];
    s.rows = min(kTileN, t->count[lo] - s.j * kTileN);
    return true;
  }

 private:
  // Item, M tile and steps of the current step; returns the token tile index.
  // 32-bit (a phase has < 2^31 steps): the compiler may merge the two phases'
  // calls into one with selected divisors, and a 64-bit division by a
  // run-time value is a helper call, a 32-bit one is not.
  template <int kMt, int kKb>
  __device__ int locate(Segment& s) const {
    const unsigned u = unsigned(step), item = u / kKb;
    s.k0 = int(u % kKb);
    s.k1 = int(min((long long)kKb, s.k0 + (end - step)));
    s.mt = int(item % kMt);
    return int(item / kMt);
  }
};

// The unit schedule's walk (contract::kScheduleUnits): unit u = a * I/128 + s
// is GEMM1 item s of active expert a (its 4 tiles are the intermediate
// columns of K128 block s of GEMM2), whole, for each of a's token tiles, then
// GEMM2's K step s of every item of H for each of them. CTA b runs the units
// whose cost prefix (a unit costs its expert's token tiles) starts in
// [T b / G, T (b + 1) / G): every GEMM1 segment of its units, then every
// GEMM2 one, so only its first GEMM2 step can wait for its inputs, and on
// this CTA's own epilogue. Units are never cut: at small B there are about as
// many as CTAs, and a cut would bring back the cross-CTA wait.
template <int kHidden, int kInter, int kTiles, int kTileN, int kGrid>
struct UnitWalker {
  using Shape = PhaseShape<kHidden, kInter, kTiles>;
  static_assert(kTiles == contract::kUnitTiles, "a unit's GEMM1 item is the tiles of one K128 block of I");
  static constexpr unsigned kKb2 = kInter / 128;
  const RouteTables* t;
  int phase;
  int unit, unit_end;  // this CTA's units [unit, unit_end) of the phase
  int j, mt;           // the token tile of the unit, and (GEMM2) the item

  template <int kThreads>
  __device__ static void fill_shares(const RouteTables&) {}
  __device__ explicit UnitWalker(const RouteTables* tables) : t(tables) { start_phase(0); }
  __device__ void start_phase(int p) {
    phase = p;
    unit = first_unit(cta_index());
    unit_end = first_unit(cta_index() + 1);
    j = mt = 0;
  }
  // The first unit whose cost prefix tile0[a] kKb2 + s n_a (n_a: a's token tiles) is at least T b / G. 32-bit
  // divisions: by a run-time value, a 64-bit one is a helper call (see SegmentWalker).
  __device__ int first_unit(int b) const {
    if (b >= kGrid || t->n_active == 0) return t->n_active * int(kKb2);
    const unsigned at = unsigned((unsigned long long)(unsigned(t->tiles) * kKb2) * unsigned(b) / kGrid);
    // Every expert one token tile (B <= tile_n: every B this schedule is planned for): each unit costs 1, so the
    // unit is the cost itself, found without the search's dependent shared loads and division, which stand
    // between the routing tables and the first weight copy.
    if (t->tiles == t->n_active) return int(at);
    const int a = last_where(t->n_active, [&](int x) { return unsigned(t->tile0[x]) * kKb2 <= at; });
    const unsigned n = unsigned(t->tile0[a + 1] - t->tile0[a]), x = at - unsigned(t->tile0[a]) * kKb2;  // x < n kKb2
    return a * int(kKb2) + int((x + n - 1) / n);
  }

  __device__ bool next(Segment& sg) {
    while (unit >= unit_end) {
      if (phase == 1) return false;
      start_phase(1);
    }
    const int a = int(unsigned(unit) / kKb2), s = int(unsigned(unit) % kKb2);
    sg.phase = phase;
    sg.a = a;
    sg.j = j;
    sg.expert = t->active[a];
    sg.rows = min(kTileN, t->count[a] - j * kTileN);
    sg.mt = phase == 0 ? s : mt;
    sg.k0 = phase == 0 ? 0 : s;
    sg.k1 = phase == 0 ? Shape::kb(0) : s + 1;
    if (phase == 0 || ++mt == Shape::mt(1)) {
      mt = 0;
      if (++j == t->tile0[a + 1] - t->tile0[a]) j = 0, ++unit;
    }
    return true;
  }
};

// The item schedule's walk (contract::kScheduleItems): whole items, dealt
// round-robin over the grid in one list, GEMM1's items then GEMM2's, so CTA b
// runs items b, b + G, b + 2G, ... No item is cut (no partial sums, no owner
// waiting for pieces), and the CTAs that draw one GEMM1 item fewer are the
// first to reach GEMM2. A CTA's share is unbalanced by up to one item, which
// the CTAs that share an SM even out where several do (they share its issue
// slots): the exact atom's three CTAs a SM at small B.
template <int kHidden, int kInter, int kTiles, int kTileN, int kGrid>
struct ItemWalker {
  using Shape = PhaseShape<kHidden, kInter, kTiles>;
  const RouteTables* t;
  int item;  // the next item of this CTA, over GEMM1's items then GEMM2's

  template <int kThreads>
  __device__ static void fill_shares(const RouteTables&) {}
  __device__ explicit ItemWalker(const RouteTables* tables) : t(tables), item(cta_index()) {}

  __device__ bool next(Segment& s) {
    const int items1 = t->tiles * Shape::mt(0);
    if (item >= items1 + t->tiles * Shape::mt(1)) return false;
    s.phase = item >= items1;
    // Divisions by compile-time constants (see SegmentWalker).
    const unsigned local = unsigned(item - (s.phase ? items1 : 0));
    const int tile = int(s.phase ? local / Shape::mt(1) : local / Shape::mt(0));
    s.mt = int(s.phase ? local % Shape::mt(1) : local % Shape::mt(0));
    s.k0 = 0;
    s.k1 = s.phase ? Shape::kb(1) : Shape::kb(0);
    const int lo = last_where(t->n_active, [&](int a) { return t->tile0[a] <= tile; });
    s.a = lo;
    s.j = tile - t->tile0[lo];
    s.expert = t->active[lo];
    s.rows = min(kTileN, t->count[lo] - s.j * kTileN);
    item += kGrid;
    return true;
  }
};

template <bool kFirst, class A, class B>
struct SelectType {
  using type = A;
};
template <class A, class B>
struct SelectType<false, A, B> {
  using type = B;
};

}  // namespace moejit
