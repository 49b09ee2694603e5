// The compute CTA's stage ring as a model: mbarrier parity waits (try_wait.parity passes when the barrier's
// completed-phase count has the other parity), the weight producer filling every step, activation warps taking
// turns by step (each waiting for its own steps' releases only), and the consumers' release orders: the step
// owners (AtomSm90Fp8::kloop_owned: an owner waits for its next own step, passes the two between, then frees its
// own) or in order (kloop). Random interleavings, some actors slow, check that no wait ever passes on a phase
// other than the one it means: where contract::activation_warps_fit holds none does, and where it does not the
// model finds one (so it can tell).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "templates/moe_contract.cuh"

namespace {

struct Op {
  bool release;  // else a wait for the step's full barriers
  int step;
};

// A warpgroup's waits and releases over segments of `steps` each (steps are numbered across segments).
std::vector<Op> consumer_ops(const std::vector<int>& segments, bool owners, int owner) {
  std::vector<Op> ops;
  int base = 0;
  for (const int steps : segments) {
    const auto pass = [&](int k) {
      ops.push_back({false, base + k});
      ops.push_back({true, base + k});
    };
    if (!owners) {
      ops.push_back({false, base});
      for (int k = 0; k < steps; ++k) {
        if (k + 1 < steps) ops.push_back({false, base + k + 1});  // the next stage, waited for before this one is freed
        ops.push_back({true, base + k});
      }
    } else if (owner >= steps) {
      for (int k = 0; k < steps; ++k) pass(k);
    } else {
      for (int k = 0; k < owner; ++k) pass(k);
      ops.push_back({false, base + owner});
      for (int ko = owner; ko < steps; ko += 3) {
        const bool more = ko + 3 < steps;
        for (int j = ko + 1; j < (more ? ko + 3 : steps); ++j) pass(j);
        if (more) ops.push_back({false, base + ko + 3});
        ops.push_back({true, base + ko});
      }
    }
    base += steps;
  }
  return ops;
}

// One random interleaving; "" when every wait passed on its own phase and all actors finished.
std::string run_ring(const std::vector<int>& segments, int act_warps, int stages, bool owners, std::mt19937& rng) {
  constexpr int kGroups = 3;
  int total = 0;
  for (const int s : segments) total += s;
  std::vector<int> released(stages, 0), arrivals(stages, 0), full_w(stages, 0), full_x(stages, 0);
  std::vector<std::vector<Op>> consumers;
  for (int g = 0; g < kGroups; ++g) consumers.push_back(consumer_ops(segments, owners, g));
  std::vector<size_t> at(kGroups, 0);
  // Producers: the weight warp (every step), then the activation warps (steps w, w + act_warps, ...).
  std::vector<std::vector<int>> fills(1 + act_warps);
  for (int n = 0; n < total; ++n) fills[0].push_back(n), fills[1 + n % act_warps].push_back(n);
  std::vector<size_t> next(fills.size(), 0), landed(fills.size(), 0);  // issued [landed, next): in flight
  // Actors: consumers, producers issuing, copies landing. Each runs at a speed redrawn now and then: a slow
  // stretch of one actor is what lets the others run a round ahead.
  const int actors = kGroups + 2 * int(fills.size());
  std::vector<double> speed(actors, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto redraw = [&](int actor) {
    const double u = unit(rng);
    speed[actor] = u < 0.15 ? 0.002 : u < 0.3 ? 0.05 : 1.0;
  };
  for (int a = 0; a < actors; ++a) redraw(a);
  const auto passes = [](int completed, int parity) { return (completed & 1) != parity; };
  for (;;) {
    std::vector<int> ready;
    for (int g = 0; g < kGroups; ++g) {
      if (at[g] == consumers[g].size()) continue;
      const Op& op = consumers[g][at[g]];
      const int s = op.step % stages, round = op.step / stages;
      if (op.release || (passes(full_w[s], round & 1) && passes(full_x[s], round & 1))) ready.push_back(g);
    }
    for (size_t p = 0; p < fills.size(); ++p) {
      if (next[p] < fills[p].size()) {
        const int n = fills[p][next[p]], s = n % stages, round = n / stages;
        if (passes(released[s], (round & 1) ^ 1)) ready.push_back(kGroups + int(p));
      }
      if (landed[p] < next[p]) ready.push_back(kGroups + int(fills.size() + p));
    }
    if (ready.empty()) {
      for (int g = 0; g < kGroups; ++g)
        if (at[g] < consumers[g].size()) return "deadlock";
      for (size_t p = 0; p < fills.size(); ++p)
        if (next[p] < fills[p].size()) return "deadlock";
      return "";
    }
    std::vector<double> weights;
    for (const int a : ready) weights.push_back(speed[a]);
    const int actor = ready[std::discrete_distribution<int>(weights.begin(), weights.end())(rng)];
    if (unit(rng) < 0.2) redraw(actor);
    if (actor < kGroups) {
      const Op op = consumers[actor][at[actor]++];
      const int s = op.step % stages, round = op.step / stages;
      if (!op.release && (full_w[s] != round + 1 || full_x[s] != round + 1))
        return "consumer " + std::to_string(actor) + " passed step " + std::to_string(op.step) + "'s wait early";
      if (op.release && ++arrivals[s] == kGroups) arrivals[s] = 0, ++released[s];
    } else if (actor < kGroups + int(fills.size())) {
      const size_t p = size_t(actor - kGroups);
      const int n = fills[p][next[p]++], s = n % stages, round = n / stages;
      if (released[s] != round)
        return "producer " + std::to_string(p) + " passed step " + std::to_string(n) + "'s wait with " +
               std::to_string(released[s]) + " releases of stage " + std::to_string(s) + ", not " +
               std::to_string(round);
    } else {
      const size_t p = size_t(actor - kGroups - int(fills.size()));
      const int n = fills[p][landed[p]++], s = n % stages;
      ++(p == 0 ? full_w[s] : full_x[s]);
    }
  }
}

// The first failure of `runs` interleavings over a few segment patterns, "" where none failed.
std::string first_failure(int act_warps, int stages, bool owners, int runs, unsigned seed) {
  std::mt19937 rng(seed);
  const std::vector<std::vector<int>> patterns = {{16}, {5, 23}, {2, 40, 3}};
  for (int r = 0; r < runs; ++r) {
    const std::string failure = run_ring(patterns[r % patterns.size()], act_warps, stages, owners, rng);
    if (!failure.empty()) return failure;
  }
  return "";
}

}  // namespace

TEST_CASE("the stage ring's parity waits stay in phase wherever contract::activation_warps_fit holds") {
  int fitting = 0;
  for (const bool owners : {false, true})
    for (int a = 1; a <= moejit::contract::kMaxActivationWarps; ++a)
      for (int stages = owners ? 4 : 2; stages <= 9; ++stages) {
        if (!moejit::contract::activation_warps_fit(a, stages, owners)) continue;
        CAPTURE(owners);
        CAPTURE(a);
        CAPTURE(stages);
        CHECK(first_failure(a, stages, owners, 150, 1000u * a + stages) == "");
        ++fitting;
      }
  CHECK(fitting > 30);
}

TEST_CASE("the ring model finds the early pass where contract::activation_warps_fit does not hold") {
  // The step owners' lag counted as 2 would have allowed these two; a third warp on an in-order ring of 2.
  struct Case {
    int act_warps, stages;
    bool owners;
  };
  for (const Case c : {Case{4, 6, true}, Case{3, 5, true}, Case{3, 2, false}}) {
    CAPTURE(c.act_warps);
    CAPTURE(c.stages);
    CAPTURE(c.owners);
    CHECK_FALSE(moejit::contract::activation_warps_fit(c.act_warps, c.stages, c.owners));
    CHECK(first_failure(c.act_warps, c.stages, c.owners, 4000, 7u) != "");
  }
}
