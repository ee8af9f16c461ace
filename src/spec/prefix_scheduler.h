// The hardware-aware prefix scheduler (DSpark, Algorithm 1; DESIGN §4): each step, decide
// for every running request how many of its drafted tokens the target verifies.
//
// Inputs: R running requests; for request r and draft position i (1-based) the survival
// a_{r,i} = ∏_{j≤i} c_{r,j}, the predicted probability that drafts 1..i all survive
// verification; SPS(B), target forward steps per second for a B-token batch; and t_o, the
// step's time outside the target forward that every plan pays alike (the drafter's).
//
//   Φ(τ, B) = τ / (1/SPS(B) + t_o)   (t_o = 0: Algorithm 1's τ·SPS(B))
//   start: B = R (every request verifies at least its anchor), τ = R, Φ_best = Φ(R, R)
//   take candidates (r, i) in order of a_{r,i}, highest first (a position only after its
//   predecessor; ties in prefix order), and for each: B += 1, τ += a_{r,i}, Φ = Φ(τ, B);
//   admit it (L_r = i) while Φ ≥ Φ_best (Φ_best = Φ), and STOP at the first candidate
//   whose Φ drops below Φ_best.
//
// Why t_o: on a CPU the drafter runs on the same cores before the target, so a step's wall
// time is the drafter's plus the forward's. Φ is the step's tokens per wall second; with
// t_o = 0 it overprices verification (an extra token costs a larger share of a shorter
// step than it really does) and the plans come out shorter than the best ones.
//
// The early stop is what keeps verification lossless: whether (r, i) is admitted depends
// only on candidates ranked before it and on its own survival, which depends on the drafts
// before it — never on draft tokens beyond the one being admitted. A scheduler that kept
// searching for a later, higher Φ would make admitting x_1 depend on x_2's confidence, and
// the accepted-token distribution would no longer be the target's (tests/spec show both).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "spec/drafter_cost.h"

namespace dspark {

// SPS(B) for B = 1 .. max_tokens: steps per second of one target forward of B tokens.
class StepCostTable {
 public:
  StepCostTable() = default;
  // steps_per_second[B - 1] = SPS(B). Smoothed on construction so that SPS never increases
  // with B (a larger batch is never faster per step) — measurement noise otherwise creates
  // spurious optima. Noise only ever slows a step, so the faster measurement wins: SPS(B)
  // becomes the largest SPS measured at B or beyond. (Capping at the smaller one instead
  // would let one slow outlier at B slow every larger batch too, and the early stop would
  // then never reach past B.)
  explicit StepCostTable(std::vector<double> steps_per_second);

  int64_t max_tokens() const { return static_cast<int64_t>(sps_.size()); }
  // B beyond the table is extrapolated at the last entry's time per token.
  double sps(int64_t num_tokens) const;
  const std::vector<double>& values() const { return sps_; }

 private:
  std::vector<double> sps_;  // [max_tokens]
};

struct PrefixSchedulerOptions {
  // Keep searching past a drop in Φ (the biased variant). Only for tests that demonstrate
  // why the early stop matters; never set in the engine.
  bool search_past_drop = false;
};

class PrefixScheduler {
 public:
  explicit PrefixScheduler(PrefixSchedulerOptions options = {});

  // survival[r]: a_{r,1..n_r} for request r (non-increasing along i; n_r = drafts it has).
  // Writes L_r (0 .. n_r) into lengths[r]. Returns the predicted number of accepted tokens
  // τ − R of the chosen plan. overhead_seconds is t_o. Allocation-free after the first
  // calls of a given size. It depends on no draft token, so the early stop stays lossless.
  double choose(std::span<const std::span<const double>> survival, const StepCostTable& cost,
                std::span<int32_t> lengths, double overhead_seconds = 0);

  // The most drafts any request could usefully verify at load R: past this many extra
  // tokens, even certain acceptance cannot beat verifying anchors only, with the drafter's
  // fixed time paid either way and its per-draft time only for the drafts (used to budget
  // the drafter).
  static int32_t max_useful_drafts(int64_t num_requests, int32_t max_drafts, const StepCostTable& cost,
                                   DrafterTime drafter = {});

  // The most drafts per request worth proposing at load R when every request is expected
  // to survive position i with probability expected_survival[i] (cumulative, measured
  // online): the longest prefix that choose() would admit for R identical requests with
  // that survival and the drafter's time for n drafts as t_o (greedy by survival,
  // stopping at the first drop of Φ), over every n whose plan reaches position n: the n of
  // the best Φ — or 0 when that plan yields fewer tokens per second than plain decoding,
  // which pays no drafter (R·SPS(R)). With a fixed drafter time this is the level where
  // one admission stops; with a per-draft time, fewer drafts also cost less to make.
  // Unlike max_useful_drafts this is an estimate, not a bound: it keeps the drafter from
  // running when the machine is too busy for its drafts to pay for themselves.
  static int32_t expected_useful_drafts(int64_t num_requests, int32_t max_drafts,
                                        std::span<const double> expected_survival, const StepCostTable& cost,
                                        DrafterTime drafter = {});

 private:
  struct Candidate {
    double survival;
    int32_t request;
    int32_t position;  // 1-based
  };
  PrefixSchedulerOptions options_;
  std::vector<Candidate> candidates_;
};

}  // namespace dspark
