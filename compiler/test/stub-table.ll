; Intrinsic stubs become the NVVM intrinsics Stubs.def names, and disappear.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s | FileCheck %s

declare i32 @__oxide_stub_thread_idx_x()
declare i32 @__oxide_stub_block_idx_y()
declare i32 @__oxide_stub_grid_dim_z()
declare i64 @__oxide_stub_clock64()

define i64 @user() {
  %t = call i32 @__oxide_stub_thread_idx_x()
  %b = call i32 @__oxide_stub_block_idx_y()
  %g = call i32 @__oxide_stub_grid_dim_z()
  %c = call i64 @__oxide_stub_clock64()
  ret i64 %c
}
; CHECK-LABEL: define i64 @user()
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
; CHECK: call i32 @llvm.nvvm.read.ptx.sreg.nctaid.z()
; CHECK: call i64 @llvm.nvvm.read.ptx.sreg.clock64()
; CHECK-NOT: __oxide_stub
