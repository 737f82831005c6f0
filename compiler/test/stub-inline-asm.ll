; An `InlineAsm` stub becomes its PTX template with the table's constraints,
; convergent and with side effects (so it is neither hoisted nor deleted):
; `nanosleep` has no LLVM intrinsic.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt -passes=lower-intrinsic-stubs --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_nanosleep(i32)

define ptx_kernel void @backoff(i32 %ns) {
  call void @__oxide_stub_nanosleep(i32 %ns)
  ret void
}
; IR: call void asm sideeffect "nanosleep.u32 $0;", "r"(i32 %ns) #[[ATTR:[0-9]+]], !oxide.stub.asm
; IR-NOT: __oxide_stub_nanosleep
; IR: attributes #[[ATTR]] = { convergent }
; PTX-LABEL: .entry backoff(
; PTX: nanosleep.u32 %r{{[0-9]+}};
