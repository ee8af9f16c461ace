#include "engine/request.h"

namespace dspark {

Request::Request(int64_t id_, std::vector<int32_t> prompt, GenerationOptions options_)
    : id(id_),
      options(std::move(options_)),
      num_prompt_tokens(static_cast<int64_t>(prompt.size())),
      tokens(std::move(prompt)),
      rng(options.sampling.seed),
      // A distinct stream for drafting, so the target's draws do not depend on the drafter.
      draft_rng(options.sampling.seed ^ 0x5bd1e9955bd1e995ull) {}

}  // namespace dspark
