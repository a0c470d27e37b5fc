# lenscheck's rooms, bottom up, and the rooms each may include: the layering, written once. Every
# arrow runs down (a room names only rooms before it in LENSCHECK_ROOMS). CMakeLists.txt links each
# room's target, lenscheck_<room>, to exactly these; scripts/check-layering.cmake fails the build on
# an #include of any other room, and on torch where the lines at the end do not allow it.
set(LENSCHECK_ROOMS model runtime oracle common synth inspect instrument audit gate mutations onnx transformers cli)
set(LENSCHECK_USES_model)
set(LENSCHECK_USES_runtime model)
set(LENSCHECK_USES_oracle model)
set(LENSCHECK_USES_common model)
set(LENSCHECK_USES_synth model common)
set(LENSCHECK_USES_inspect model common)
set(LENSCHECK_USES_instrument model runtime common)
set(LENSCHECK_USES_gate model runtime oracle common synth instrument)
set(LENSCHECK_USES_audit model runtime common instrument)
set(LENSCHECK_USES_mutations model runtime oracle common instrument gate audit)
set(LENSCHECK_USES_onnx model runtime oracle common gate)
set(LENSCHECK_USES_transformers model runtime common gate)
set(LENSCHECK_USES_cli model runtime oracle common synth inspect instrument gate audit mutations onnx transformers)
# Outside the layering, above every room: these may include any room but never torch, and no room
# includes them.
set(LENSCHECK_ABOVE_ROOMS tests properties bench fuzz)
# torch (torch/, ATen/, c10/, caffe2/) is the oracle's alone: oracle/*.cpp include it, directly or
# through oracle/'s private headers (oracle/torch_oracle.h). Outside oracle/ a file includes only the
# oracle's public headers, these, and they reach no torch, directly or through the headers they include.
set(LENSCHECK_ORACLE_PUBLIC_HEADERS oracle/oracle.h)
