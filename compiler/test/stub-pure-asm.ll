; A `PureAsm` stub becomes its PTX template with the table's constraints, but
; without side effects, memory access or convergence, and Retarget leaves it
; so: O3 may then merge two equal calls and delete an unused one, as it does
; arithmetic (f16 add has no LLVM 22 intrinsic a stable rustc can reach).
; RUN: %oxide-opt -passes=lower-intrinsic-stubs,retarget %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt -passes=lower-intrinsic-stubs,retarget,early-cse %s | FileCheck %s --check-prefix=CSE
; RUN: %oxide-opt -passes=lower-intrinsic-stubs --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare i16 @__oxide_stub_f16_add(i16, i16)

define ptx_kernel void @sum(i16 %a, i16 %b, ptr %out) {
  %x = call i16 @__oxide_stub_f16_add(i16 %a, i16 %b)
  %y = call i16 @__oxide_stub_f16_add(i16 %a, i16 %b)
  %unused = call i16 @__oxide_stub_f16_add(i16 %b, i16 %b)
  store i16 %x, ptr %out
  %p = getelementptr i16, ptr %out, i64 1
  store i16 %y, ptr %p
  ret void
}
; IR: call i16 asm "add.rn.f16 $0, $1, $2;", "=h,h,h"(i16 %a, i16 %b) #[[ATTR:[0-9]+]], !oxide.stub.asm
; IR-NOT: __oxide_stub_f16_add
; IR: attributes #[[ATTR]] = { nounwind willreturn memory(none) }

; CSE: call i16 asm "add.rn.f16
; CSE-NOT: call i16 asm

; PTX-LABEL: .entry sum(
; PTX: add.rn.f16 %rs{{[0-9]+}}, %rs{{[0-9]+}}, %rs{{[0-9]+}};
