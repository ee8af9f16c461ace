// A drafter's reduced vocabulary, stored the speculators way: the drafter's LM head (and a
// DSpark drafter's Markov W₂) has one row per draft id d = 0..V_d−1, and draft id d drafts
// target token d + d2t[d]. A drafter that only ever proposes the tokens its target actually
// writes then pays V_d·H instead of V·H per drafted position for its costliest matmul.
//
// Verification always sees a distribution over the whole target vocabulary: the proposer
// scatters the V_d draft logits into a target-vocabulary row whose other entries are −∞, so
// q is exactly zero outside the draft vocabulary and the rejection sampler stays lossless.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "loader/safetensors.h"

namespace dspark {

// Reads PREFIXd2t ([draft_vocab_size], I64 or I32) from the drafter's weights as target ids,
// each inside 0..vocab−1 and none twice; PREFIXt2d ([vocab], BOOL), when present, must mark
// exactly those. prefix: "" (the drafter's vocabulary) or "greedy_vocab." (its greedy one);
// `kind` names the drafter in errors ("EAGLE-3", "DSpark").
std::vector<int32_t> read_draft_to_target(const WeightStore& store, std::string_view prefix, int64_t draft_vocab_size,
                                          int64_t vocab, std::string_view kind);

// target_row[to_target[d]] = draft_row[d] for every draft id d; the other entries of
// target_row are left as they are (a caller that keeps the row fills them with −∞ once).
void scatter_draft_logits(std::span<const int32_t> to_target, const float* draft_row, float* target_row);

// The target id a greedy transform of the scattered row (−∞ outside the draft vocabulary)
// picks, read from the draft row [size] itself: its largest logit (NaN counting as −∞), the
// lowest target id on ties, as argmax over the scattered row gives (to_target empty: the row
// is the target row). ascending: to_target increases (then the first draft argmax wins ties).
// −1 when every logit is −∞ or NaN: then only the transform decides.
int32_t greedy_draft_token(const float* draft_row, int64_t size, std::span<const int32_t> to_target, bool ascending);

// Which requests a written draft vocabulary serves.
enum class DraftVocabUse {
  kEveryRequest,    // the speculators reduced vocabulary: draft_vocab_size V_d, d2t, t2d
  kGreedyRequests,  // a second head beside the whole vocabulary: greedy_draft_vocab_size V_g, greedy_vocab.*
};

// Writes drafter_dir's drafter with the draft vocabulary target_ids (distinct target ids,
// draft id d = target_ids[d]) into out_dir. Every tensor is copied byte for byte, and the
// vocabulary's LM-head and Markov W₂ rows are those of target_ids in the drafter's (the
// target's LM head, read from target_dir, when the drafter shares it):
//  kEveryRequest: lm_head.weight and markov_w2 become those rows; d2t [V_d] (I64), t2d [V].
//  kGreedyRequests: greedy_vocab.lm_head.weight, greedy_vocab.markov_w2.weight and
//    greedy_vocab.d2t are added; the drafter keeps its whole vocabulary for sampled requests.
// Either way the drafter's function on those tokens is unchanged: every logit it still
// computes has the same value. drafter_dir must have the whole vocabulary and no greedy one.
void write_draft_vocab(const std::filesystem::path& drafter_dir, const std::filesystem::path& target_dir,
                       std::span<const int32_t> target_ids, DraftVocabUse use, const std::filesystem::path& out_dir);

}  // namespace dspark
