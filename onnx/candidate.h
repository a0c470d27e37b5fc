#pragma once
// `--candidate onnxruntime[:fp16|:int8]`: the checkpoint exported with every trace tensor as an output,
// run in ONNX Runtime on every sentence, judged as the runtime is.
#include <string>

#include "gate/candidate.h"
#include "model/arithmetic.h"
#include "onnx/export.h"
#include "onnx/onnxruntime.h"

namespace lenscheck::onnx_export {

struct CandidateSpec {
  Variant variant = Variant::fp32;
  onnxruntime::Options ort;
};
// "onnxruntime", "onnxruntime:fp16", "onnxruntime:int8"; InputError naming --candidate otherwise.
Variant parse_candidate(const std::string& candidate);
// What a variant's graph computes in, as it declares to the gate: fp32, fp16, int8 (model/arithmetic.h).
Arithmetic declared_arithmetic(Variant variant);

// ONNX Runtime as the gate judges it (verify, calibrate): each checkpoint exported with every trace
// tensor as an output, run on its inputs, declaring the variant's scheme. It has no runtime fault seam.
Candidate candidate(const CandidateSpec& spec);

}  // namespace lenscheck::onnx_export
