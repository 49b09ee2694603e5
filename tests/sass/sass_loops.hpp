#pragma once
// The K-loops of a kernel's SASS (nvdisasm -c output): every innermost loop
// (a backward branch to a label) that issues tensor-core MMAs, with its static
// instruction mix. Static counts of a loop body are what the loop issues per
// iteration: the bodies hold no inner branches that skip work.

#include <string>
#include <string_view>
#include <vector>

namespace moejit::sass {

struct LoopMix {
  std::string label;      // ".L_x_58"
  std::string first_mma;  // "QGMMA.64x8x32.F32.E4M3.E4M3 ..."
  int instructions = 0;   // everything in the body, the branch included
  int alu = 0;            // integer and logic pipe: LOP3, SHF, PRMT, IADD3, ISETP, SEL, LEA, IMNMX, MOV, ...
  int imad = 0;           // IMAD (the FMA pipe's integer ops, ptxas's moves included)
  int fp32 = 0;           // FMUL, FFMA, FADD
  int mma = 0;            // QGMMA, HGMMA, HMMA
  int mma_waits = 0;      // WARPGROUP.DEPBAR: the fast path waits two to four times per K128 step
};

// Every MMA loop of `sass`, in address order.
std::vector<LoopMix> mma_loops(std::string_view sass);

// Every instruction of `sass` in address order, its predicate kept ("@!P0 BRA `(.L_x_5)").
std::vector<std::string> instructions(std::string_view sass);

// The runs of the activation producer's 16-byte copies (LDGSTS.E.BYPASS.128)
// that are one unrolled pass sequence: copies no more than `max_gap`
// instructions apart. Each run is the indices of its copies in `instructions`.
std::vector<std::vector<std::size_t>> copy_runs(const std::vector<std::string>& instructions, std::size_t max_gap);

// The nvdisasm to use: $MOEJIT_NVDISASM, the copy tools/dev.sh installs under
// .cache/nvdisasm, the CUDA toolkit's, or PATH's; empty when there is none.
std::string find_nvdisasm(const std::string& source_dir);

// Disassembles `cubin` with `nvdisasm` (-c: code only). Throws on failure.
std::string disassemble(const std::string& nvdisasm, const std::vector<char>& cubin);

}  // namespace moejit::sass
