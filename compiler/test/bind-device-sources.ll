; A declaration that a CUDA C++ device source defines (oxide-opt's
; -device-symbol stands for what DeviceSources.cpp read from nvcc's PTX) gets
; the oxide-device-source attribute, naming the file, and a row of
; !oxide.device_sources for its host stub; reject-unsupported then accepts
; the call. A declaration no device source defines is left alone (and
; rejected: device-source-unresolved.ll), as is one nothing calls. A
; libdevice function called by name gets a row too (its host stub), not the
; attribute: reject-unsupported accepts libdevice anyway.
; RUN: %oxide-opt -passes=bind-device-sources,reject-unsupported -device-symbol=cxx_poly=src/ops.cu -device-symbol=cxx_unused=src/ops.cu %s | FileCheck %s

declare float @cxx_poly(float, float, float)
declare float @cxx_unused(float)
declare float @__nv_sinf(float)

define ptx_kernel void @k(ptr %out, float %x) {
  %r = call float @cxx_poly(float %x, float 1.0, float 2.0)
  %s = call float @__nv_sinf(float %r)
  store float %s, ptr %out
  ret void
}
; CHECK: declare float @cxx_poly(float, float, float) [[ATTR:#[0-9]+]]
; CHECK: declare float @cxx_unused(float){{$}}
; CHECK: declare float @__nv_sinf(float){{$}}
; CHECK: attributes [[ATTR]] = { "oxide-device-source"="src/ops.cu" }
; CHECK: !oxide.device_sources = !{[[ROW:![0-9]+]], [[LD:![0-9]+]]}
; CHECK: [[ROW]] = !{!"cxx_poly", !"src/ops.cu"}
; CHECK: [[LD]] = !{!"__nv_sinf", !"libdevice"}
