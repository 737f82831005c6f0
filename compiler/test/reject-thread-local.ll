; A thread_local! static belongs to host threads. Its storage is only touched
; by the accessor whose address the LocalKey holds (reached by address, not by
; a call), inside thread_local!'s expansion: the error names the static as
; the user wrote it and points at the user's `.with(..)`.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

@"_ZN4demo5COUNT28_$u7b$$u7b$closure$u7d$$u7d$3VAL17h0123456789abcdefE" = internal thread_local global i32 0
; The LocalKey: a constant holding the accessor.
@_ZN4demo5COUNT17h0123456789abcdefE = internal constant ptr @"_ZN4demo5COUNT28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE"

; The accessor thread_local! generates (its lines are the macro's).
define internal ptr @"_ZN4demo5COUNT28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE"() !dbg !12 {
  %p = call ptr @llvm.threadlocal.address.p0(ptr @"_ZN4demo5COUNT28_$u7b$$u7b$closure$u7d$$u7d$3VAL17h0123456789abcdefE"), !dbg !13
  ret ptr %p
}
declare ptr @llvm.threadlocal.address.p0(ptr)

; LocalKey::with calls the accessor through the pointer.
define internal i32 @"_ZN3std6thread5local17LocalKey$LT$T$GT$4with17h0123456789abcdefE"(ptr %key) !dbg !20 {
  %get = load ptr, ptr %key, !dbg !21
  %p = call ptr %get(), !dbg !21
  %v = load i32, ptr %p, !dbg !21
  ret i32 %v
}

define internal void @_ZN4demo3tls17h0123456789abcdefE() !dbg !10 {
  %n = call i32 @"_ZN3std6thread5local17LocalKey$LT$T$GT$4with17h0123456789abcdefE"(ptr @_ZN4demo5COUNT17h0123456789abcdefE), !dbg !11
  ret void
}
define ptx_kernel void @_ZN4demo24__oxide_kernel_entry_tls17h0123456789abcdefE() {
  call void @_ZN4demo3tls17h0123456789abcdefE()
  ret void
}

; CHECK:      error: thread-local static `demo::COUNT` cannot be used on the GPU: thread-local statics (thread_local!) belong to host threads and are not available in kernels
; CHECK-NEXT:   --> src/main.rs:14:19
; CHECK-NEXT:    = note: in kernel `demo::tls`
; CHECK-NEXT:    = note: call chain: `demo::tls` → `demo::COUNT::{{[{][{]}}closure}}`{{$}}
; CHECK-NOT:  error:
; CHECK:      error: oxide could not compile the kernels for the GPU (1 error)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DIFile(filename: "/rustc/0123/library/std/src/thread/local.rs", directory: "")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "tls", scope: !2, file: !2, line: 12, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 14, column: 19, scope: !10)
!12 = distinct !DISubprogram(name: "{closure#0}", scope: !2, file: !2, line: 7, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!13 = !DILocation(line: 7, column: 1, scope: !12)
!20 = distinct !DISubprogram(name: "with", scope: !3, file: !3, line: 280, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!21 = !DILocation(line: 283, column: 9, scope: !20)
