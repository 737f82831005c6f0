; An entry wrapper's parameter layouts (constants in the unoptimised
; bitcode) become byval byte-array parameters of a ptx_kernel entry, one per
; Rust parameter; a zero-sized parameter still gets one byte.
; RUN: %oxide-opt -passes=build-kernel-entries %s | FileCheck %s

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare void @_ZN6vecadd6vecadd17h0000000000000000E(ptr, i64, float)

define internal void @_ZN6vecadd27__oxide_kernel_entry_vecadd17h97c0c595205bf586E(ptr %0, ptr %1, ptr %2) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 4, i64 4)
  call void @__oxide_stub_param_layout(i32 2, i64 0, i64 1)
  ret void
}
attributes #0 = { noinline }

; CHECK-LABEL: define internal void @_ZN6vecadd27__oxide_kernel_entry_vecadd17h97c0c595205bf586E.oxide.body(ptr %0, ptr %1, ptr %2)
; CHECK-NOT: __oxide_stub_param_layout
; CHECK: define ptx_kernel void @_ZN6vecadd27__oxide_kernel_entry_vecadd17h97c0c595205bf586E(ptr byval([16 x i8]) align 8 %p0, ptr byval([4 x i8]) align 4 %p1, ptr byval([1 x i8]) align 1 %p2)
; CHECK: call void @_ZN6vecadd27__oxide_kernel_entry_vecadd17h97c0c595205bf586E.oxide.body(ptr %p0, ptr %p1, ptr %p2)
; CHECK: attributes #{{[0-9]+}} = { alwaysinline }
; CHECK: !oxide.kernels = !{![[K:[0-9]+]]}
; CHECK: ![[K]] = !{ptr @_ZN6vecadd27__oxide_kernel_entry_vecadd17h97c0c595205bf586E, !"_ZN6vecadd27__oxide_kernel_entry_vecadd17h97c0c595205bf586E", i64 3}
