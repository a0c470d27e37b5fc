#pragma once
// `lenscheck verify --candidate onnxruntime[:fp16|:int8]`: the checkpoint exported with every trace
// tensor as an output, run in ONNX Runtime on every sentence, judged as the runtime is.
#include <string>

#include "gate/calibrate.h"
#include "gate/verify.h"
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

// ONNX Runtime as `lenscheck calibrate` judges it: each model exported (with every trace tensor) and run
// on its inputs, declaring the variant's arithmetic. It has no runtime fault seam.
CalibrationCandidate calibration_candidate(const CandidateSpec& spec);

VerifyResult verify_onnxruntime(const Checkpoint& checkpoint, const std::vector<Sentence>& sentences,
                                const std::filesystem::path& sentences_file, const Tolerances& tolerances,
                                const VerifyOptions& options, const CandidateSpec& spec);

}  // namespace lenscheck::onnx_export
