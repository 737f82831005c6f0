; A host function reached through the standard library is reported as the
; call the user wrote, at the user's line (never a line of the library), for
; the reason its call chain gives (`std::env::var` → the environment, even
; though the body-less function is `std::env::_var`). One error per line of
; user code: the String that `var` returns, dropped on the same line, adds
; none. A static the library itself writes is the library's business and
; reads as the call too.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

declare void @_ZN3std3env4_var17h0123456789abcdefE(ptr)
declare void @__rust_dealloc(ptr, i64, i64)
declare void @_ZN3std3sys6thread4unix6Thread3new17h0123456789abcdefE()
@_ZN3std6thread9lifecycle15spawn_unchecked7SPAWNED17h0123456789abcdefE = internal global i64 0

define internal void @_ZN3std3env3var17h0123456789abcdefE(ptr %out) !dbg !20 {
  call void @_ZN3std3env4_var17h0123456789abcdefE(ptr %out), !dbg !21
  ret void
}
define internal void @"_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17h0123456789abcdefE"(ptr %s) !dbg !22 {
  call void @__rust_dealloc(ptr %s, i64 1, i64 1), !dbg !23
  ret void
}
define internal void @_ZN3std6thread9lifecycle15spawn_unchecked17h0123456789abcdefE() !dbg !24 {
  store atomic i64 1, ptr @_ZN3std6thread9lifecycle15spawn_unchecked7SPAWNED17h0123456789abcdefE monotonic, align 8, !dbg !25
  call void @_ZN3std3sys6thread4unix6Thread3new17h0123456789abcdefE(), !dbg !25
  ret void
}
define internal void @_ZN3std6thread9functions5spawn17h0123456789abcdefE() !dbg !26 {
  call void @_ZN3std6thread9lifecycle15spawn_unchecked17h0123456789abcdefE(), !dbg !27
  ret void
}

define internal void @_ZN4demo4host17h0123456789abcdefE() !dbg !10 {
  %s = alloca [24 x i8], align 8
  call void @_ZN3std3env3var17h0123456789abcdefE(ptr %s), !dbg !11
  call void @"_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17h0123456789abcdefE"(ptr %s), !dbg !12
  call void @_ZN3std6thread9functions5spawn17h0123456789abcdefE(), !dbg !13
  ret void
}
define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_host17h0123456789abcdefE() {
  call void @_ZN4demo4host17h0123456789abcdefE()
  ret void
}

; CHECK:      error: `std::env::var` cannot be called on the GPU: the host environment (std::env) is not available in kernels
; CHECK-NEXT:   --> src/main.rs:9:13
; CHECK-NEXT:    = note: in kernel `demo::host`
; CHECK-NEXT:    = note: call chain: `demo::host` → `std::env::var` → `std::env::_var`{{$}}
; CHECK:      error: `std::thread::functions::spawn` cannot be called on the GPU: host threads (std::thread) are not available in kernels
; CHECK-NEXT:   --> src/main.rs:11:5
; CHECK-NEXT:    = note: in kernel `demo::host`
; CHECK-NEXT:    = note: call chain: `demo::host` → `std::thread::functions::spawn` → `std::thread::lifecycle::spawn_unchecked`
; CHECK-NOT:  error: {{.*}}drop_in_place
; CHECK-NOT:  SPAWNED
; CHECK:      error: oxide could not compile the kernels for the GPU (2 errors)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DIFile(filename: "/rustc/0123/library/std/src/env.rs", directory: "")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "host", scope: !2, file: !2, line: 8, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 9, column: 13, scope: !10)
!12 = !DILocation(line: 9, column: 46, scope: !10)
!13 = !DILocation(line: 11, column: 5, scope: !10)
!20 = distinct !DISubprogram(name: "var", scope: !3, file: !3, line: 250, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!21 = !DILocation(line: 251, column: 5, scope: !20)
!22 = distinct !DISubprogram(name: "drop_in_place", scope: !3, file: !3, line: 500, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!23 = !DILocation(line: 501, column: 1, scope: !22)
!24 = distinct !DISubprogram(name: "spawn_unchecked", scope: !3, file: !3, line: 600, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!25 = !DILocation(line: 601, column: 9, scope: !24)
!26 = distinct !DISubprogram(name: "spawn", scope: !3, file: !3, line: 700, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!27 = !DILocation(line: 701, column: 5, scope: !26)
