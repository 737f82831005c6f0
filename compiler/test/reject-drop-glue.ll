; The drop of a Vec at the end of a scope reaches the host allocator too, but
; the user's mistake is where the Vec was made: a drop is only reported when
; nothing else in the kernel is.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

declare void @_ZN5alloc3vec9from_elem17h0123456789abcdefE(ptr, i32, i64)
declare void @__rust_dealloc(ptr, i64, i64)

define internal void @"_ZN4core3ptr47drop_in_place$LT$alloc..vec..Vec$LT$u32$GT$$GT$17h0123456789abcdefE"(ptr %v) !dbg !20 {
  call void @__rust_dealloc(ptr %v, i64 4, i64 4), !dbg !21
  ret void
}

define internal void @_ZN4demo4fill17h0123456789abcdefE() !dbg !10 {
  %v = alloca [24 x i8], align 8
  call void @_ZN5alloc3vec9from_elem17h0123456789abcdefE(ptr %v, i32 1, i64 4), !dbg !11
  call void @"_ZN4core3ptr47drop_in_place$LT$alloc..vec..Vec$LT$u32$GT$$GT$17h0123456789abcdefE"(ptr %v), !dbg !12
  ret void
}
define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_fill17h0123456789abcdefE() {
  call void @_ZN4demo4fill17h0123456789abcdefE()
  ret void
}

define internal void @_ZN4demo9only_drop17h0123456789abcdefE(ptr %v) !dbg !13 {
  call void @"_ZN4core3ptr47drop_in_place$LT$alloc..vec..Vec$LT$u32$GT$$GT$17h0123456789abcdefE"(ptr %v), !dbg !14
  ret void
}
define ptx_kernel void @_ZN4demo30__oxide_kernel_entry_only_drop17h0123456789abcdefE(ptr %v) {
  call void @_ZN4demo9only_drop17h0123456789abcdefE(ptr %v)
  ret void
}

; CHECK:      error: `alloc::vec::from_elem` cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
; CHECK-NEXT:   --> src/main.rs:9:23
; CHECK-NEXT:    = note: in kernel `demo::fill`
; CHECK-NOT:  src/main.rs:13:1
; CHECK:      error: `core::ptr::drop_in_place<alloc::vec::Vec<u32>>` cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
; CHECK-NEXT:   --> src/main.rs:21:1
; CHECK-NEXT:    = note: in kernel `demo::only_drop`
; CHECK-NEXT:    = note: call chain: `demo::only_drop` → `core::ptr::drop_in_place<alloc::vec::Vec<u32>>` → `__rust_dealloc`{{$}}
; CHECK:      error: oxide could not compile the kernels for the GPU (2 errors)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DIFile(filename: "/rustc/0123/library/core/src/ptr/mod.rs", directory: "")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "fill", scope: !2, file: !2, line: 8, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 9, column: 23, scope: !10)
!12 = !DILocation(line: 13, column: 1, scope: !10)
!13 = distinct !DISubprogram(name: "only_drop", scope: !2, file: !2, line: 20, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!14 = !DILocation(line: 21, column: 1, scope: !13)
!20 = distinct !DISubprogram(name: "drop_in_place", scope: !3, file: !3, line: 500, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!21 = !DILocation(line: 501, column: 1, scope: !20)
