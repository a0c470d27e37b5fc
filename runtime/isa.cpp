// Which instruction set the kernels run on, and the table of what is compiled for each (runtime/simd.h).
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/kernels.h"
#include "runtime/simd.h"

namespace lenscheck::runtime {

namespace {

InstructionSet parse_instruction_set(std::string_view name) {
  for (InstructionSet set : {InstructionSet::baseline, InstructionSet::avx2, InstructionSet::avx512})
    if (name == instruction_set_name(set)) return set;
  throw std::invalid_argument("LENSCHECK_ISA=" + std::string(name) + ": not one of baseline, avx2, avx512");
}

// The widest set this CPU has, or the one LENSCHECK_ISA names.
InstructionSet initial_instruction_set() {
  InstructionSet widest = InstructionSet::baseline;
  for (InstructionSet set : {InstructionSet::avx2, InstructionSet::avx512})
    if (instruction_set_supported(set)) widest = set;
  const char* forced = std::getenv("LENSCHECK_ISA");
  if (!forced) return widest;
  const InstructionSet set = parse_instruction_set(forced);
  if (!instruction_set_supported(set))
    throw std::invalid_argument(std::string("LENSCHECK_ISA=") + forced + ": this CPU lacks it");
  return set;
}

std::atomic<InstructionSet>& current_instruction_set() {
  static std::atomic<InstructionSet> set{initial_instruction_set()};
  return set;
}

}  // namespace

const char* instruction_set_name(InstructionSet set) {
  switch (set) {
    case InstructionSet::avx512: return "avx512";
    case InstructionSet::avx2: return "avx2";
    case InstructionSet::baseline: break;
  }
  return "baseline";
}

bool instruction_set_supported(InstructionSet set) {
  switch (set) {
#if defined(__x86_64__)
    case InstructionSet::avx512: return __builtin_cpu_supports("avx512f");
    case InstructionSet::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    case InstructionSet::avx512:
    case InstructionSet::avx2: return false;
#endif
    case InstructionSet::baseline: break;
  }
  return true;
}

InstructionSet instruction_set() { return current_instruction_set().load(std::memory_order_relaxed); }

void use_instruction_set(InstructionSet set) {
  if (!instruction_set_supported(set))
    throw std::invalid_argument(std::string(instruction_set_name(set)) + ": this CPU lacks it");
  current_instruction_set() = set;
}

namespace simd {

const IsaKernels& isa_kernels() {
  // Indexed by InstructionSet: baseline, avx2, avx512. Without x86-64 every row is the baseline's.
  static const IsaKernels table[] = {
      {runs_baseline, multiply_baseline, map_baseline},
#if defined(__x86_64__)
      {runs_avx2, multiply_avx2, map_avx2},
      {runs_avx512, multiply_avx512, map_avx512},
#else
      {runs_baseline, multiply_baseline, map_baseline},
      {runs_baseline, multiply_baseline, map_baseline},
#endif
  };
  return table[static_cast<size_t>(instruction_set())];
}

}  // namespace simd

}  // namespace lenscheck::runtime
