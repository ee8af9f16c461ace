// A request's own correction of the drafter's confidences, learned from its verifications.
//
// The confidence head's c_j (DESIGN §4: the probability that draft j survives given that
// drafts 1..j-1 did) is calibrated on the training sources as a whole, and a request's
// domain shifts it. On the eval sets, greedy, the shipped head is too cautious on code and
// too sure on arithmetic at once (predicted / observed survival of drafts 1..4: HumanEval
// 0.24 / 0.36, GSM8K 0.47 / 0.41), which no per-position temperature can mend. Every
// round tells the request which of its drafts survived, so it corrects itself:
//
//   c'_j = σ(logit(c_j) + b)
//
// with one offset b per request: the posterior mode of a logistic model whose prior on b is
// N(0, 1 / prior_precision), updated by one Newton step per round (each position a Bernoulli
// observation where it was reached: verified, its predecessors accepted). The precision
// adds up over rounds, so the first rounds move b most and later ones refine it.
//
// Lossless: b depends only on earlier rounds' verdicts, fixed before this round's drafts
// exist, so the prefix scheduler still admits each draft from its predecessors alone.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

namespace dspark {

class ConfidenceOffset {
 public:
  // A prior worth about 10 observations near c = 0.5 (each adds c (1 - c) = 0.25).
  static constexpr double kDefaultPriorPrecision = 2.5;

  // max_precision caps the accumulated precision, so that b keeps following a bias that
  // drifts: once the cap is reached every observation moves b by a step of the same size,
  // and older ones fade (an exponential memory instead of an ever-growing average).
  explicit ConfidenceOffset(double prior_precision = kDefaultPriorPrecision,
                            double max_precision = std::numeric_limits<double>::infinity());

  // out[j] = σ(logit(confidence[j]) + b); out may alias confidence.
  void apply(std::span<const float> confidence, std::span<float> out) const;
  // One verification round: confidence = the head's c_j of its verified drafts (before
  // apply), of which the first num_accepted were accepted.
  void observe(std::span<const float> confidence, int32_t num_accepted);
  // One draft that survives with a known probability: its head's c (before apply) and that
  // probability, a soft Bernoulli observation (a sampled round's first cut draft, whose
  // acceptance test's probability the round's target distribution gives).
  void observe_soft(float confidence, double survival);

  double offset() const { return offset_; }

 private:
  // One Newton step: the log-likelihood's gradient and curvature in b over the observations.
  void step(double gradient, double curvature);

  double offset_ = 0;  // b
  double precision_;   // prior + Σ c'(1 - c') over the observations so far, at most max_precision_
  double max_precision_;
};

}  // namespace dspark
