; `Marker` stubs keep their calls through O3: the stub's host body goes, and
; it becomes a declaration that accesses no memory and is not convergent
; (attribute "oxide-marker"), so O3 treats a call like arithmetic. Retarget
; then marks every other call convergent, but not these, and
; RejectUnsupported accepts a kernel that reaches them.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=STUB
; RUN: %oxide-opt -passes=lower-intrinsic-stubs,retarget %s | FileCheck %s --check-prefix=RETARGET
; RUN: %oxide-opt -passes=lower-intrinsic-stubs,retarget,reject-unsupported %s > /dev/null

; The host body returns the index.
define i64 @__oxide_stub_disjoint_index_2d(i64 noundef %index, i64 %row_len, ptr %at) noinline {
  ret i64 %index
}
define internal void @other() {
  ret void
}

define ptx_kernel void @__oxide_kernel_entry_k(i64 %i, i64 %w) {
  %m = call i64 @__oxide_stub_disjoint_index_2d(i64 noundef %i, i64 %w, ptr null)
  call void @other()
  ret void
}
!oxide.kernels = !{!0}
!0 = !{ptr @__oxide_kernel_entry_k, !"h_k", i64 2}

; STUB: declare i64 @__oxide_stub_disjoint_index_2d(i64, i64, ptr) #[[MARKER:[0-9]+]]
; STUB: call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr null){{$}}
; STUB: attributes #[[MARKER]] = { nofree nosync nounwind speculatable willreturn memory(none) "oxide-marker" }

; RETARGET: declare i64 @__oxide_stub_disjoint_index_2d(i64, i64, ptr) #[[MARKER:[0-9]+]]
; RETARGET-LABEL: define ptx_kernel void @__oxide_kernel_entry_k(
; RETARGET-NEXT: %m = call i64 @__oxide_stub_disjoint_index_2d(i64 %i, i64 %w, ptr null){{$}}
; RETARGET-NEXT: call void @other() #[[CONVERGENT:[0-9]+]]
; RETARGET-NOT: attributes #[[MARKER]] = {{.*}}convergent
; RETARGET: attributes #[[CONVERGENT]] = { convergent }
