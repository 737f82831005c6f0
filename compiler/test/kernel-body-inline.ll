; The entry wrapper's calls of defined functions (the kernel's body) become
; always-inline at the call site, so that a body too large for the inliner's
; threshold still ends up in the ptx_kernel entry, where its pointers are the
; entry's global parameters. Declarations, intrinsics and noinline calls or
; functions (`#[inline(never)]`: the user's word) are left alone, and so is
; another caller of the same body.
; RUN: %oxide-opt -passes=build-kernel-entries %s | FileCheck %s
; RUN: %oxide-opt -passes=build-kernel-entries,always-inline %s | FileCheck %s --check-prefix=INLINED

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare void @external(ptr)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define internal void @_ZN4gemm4gemm17h0000000000000000E(ptr %a) {
  %x = load float, ptr %a
  store float %x, ptr %a
  ret void
}

define internal void @helper(ptr %a) {
  ret void
}

define internal void @never(ptr %a) #1 {
  ret void
}

define internal void @_ZN4gemm25__oxide_kernel_entry_gemm17h97c0c595205bf586E(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  %p = load ptr, ptr %0
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  call void @_ZN4gemm4gemm17h0000000000000000E(ptr %p)
  call void @external(ptr %p)
  call void @helper(ptr %p) #2
  call void @never(ptr %p)
  ret void
}

define void @other_caller(ptr %p) {
  call void @_ZN4gemm4gemm17h0000000000000000E(ptr %p)
  ret void
}

attributes #0 = { noinline }
attributes #1 = { noinline }
attributes #2 = { noinline }

; CHECK-LABEL: define internal void @_ZN4gemm25__oxide_kernel_entry_gemm17h97c0c595205bf586E.oxide.body(
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.tid.x(){{$}}
; CHECK: call void @_ZN4gemm4gemm17h0000000000000000E(ptr %p) #[[ALWAYS:[0-9]+]]
; CHECK: call void @external(ptr %p){{$}}
; CHECK: call void @helper(ptr %p) #[[NEVER:[0-9]+]]
; CHECK: call void @never(ptr %p){{$}}
; CHECK-LABEL: define void @other_caller(
; CHECK: call void @_ZN4gemm4gemm17h0000000000000000E(ptr %p){{$}}
; CHECK-DAG: attributes #[[ALWAYS]] = { alwaysinline }
; CHECK-DAG: attributes #[[NEVER]] = { noinline }

; After the always-inliner, the body's load and store are in the entry (the
; wrapper, itself always-inline, is gone) and the body is called no more.
; INLINED-LABEL: define ptx_kernel void @_ZN4gemm25__oxide_kernel_entry_gemm17h97c0c595205bf586E(
; INLINED-NOT: call void @_ZN4gemm4gemm17h0000000000000000E
; INLINED: load float
; INLINED-NEXT: store float
; INLINED-NOT: call void @_ZN4gemm4gemm17h0000000000000000E
; INLINED: call void @external(
