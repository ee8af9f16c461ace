#include "train/model/bf16_default.h"

#include "kernels/isa.h"

namespace dspark::train {

bool bf16_autocast_by_default() { return isa_supported(Isa::kAvx512Bf16); }

}  // namespace dspark::train
