// The trainer's default for bf16 autocast on this CPU.
//
// On with native bf16 arithmetic (AVX512_BF16; every AMX CPU has it too), where bf16
// matmuls run at least as fast as f32 and halve the activations' memory. Off elsewhere:
// without it libtorch's CPU bf16 matmuls have no fast path (on an AVX2-only Zen 2, drafter
// training ran at 12 tokens/s under autocast against 470 in f32). `--bf16` overrides it.
#pragma once

namespace dspark::train {

bool bf16_autocast_by_default();

}  // namespace dspark::train
