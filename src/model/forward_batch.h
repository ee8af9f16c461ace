// The input of one target forward: a flat batch of tokens from several sequences
// (token-flattened, as in vLLM v1). Each sequence contributes a contiguous run of tokens
// that continue it at start_position; its block table must already cover every position
// up to start_position + num_tokens - 1. Attention is causal within each sequence.
#pragma once

#include <cstdint>
#include <span>

namespace dspark {

struct SequenceSlice {
  int32_t num_tokens = 0;               // tokens of this sequence in the batch (>= 1)
  int32_t start_position = 0;           // position of its first token = tokens already cached
  const int32_t* block_table = nullptr; // [>= ceil((start_position + num_tokens) / block_size)]
};

struct ForwardBatch {
  std::span<const int32_t> token_ids;        // [num_tokens], sequences back to back
  std::span<const SequenceSlice> sequences;  // [num_sequences]
  std::span<const int32_t> logit_rows;       // rows of token_ids whose logits are wanted
};

}  // namespace dspark
