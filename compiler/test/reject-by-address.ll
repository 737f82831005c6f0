; Code reached through a function's address (a `&dyn Trait` vtable) is
; checked like called code. Addresses that only build a panic message are not
; followed: LowerPanics' bodies ignore the `&dyn Debug` and `fmt::Arguments`
; they are given, and the formatting impls (`<T as core::fmt::Display>::fmt`)
; are only reached to format, which the device never does.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

declare ptr @__rust_alloc(i64, i64)
declare void @__rust_dealloc(ptr, i64, i64)
declare i1 @"_ZN58_$LT$alloc..string..String$u20$as$u20$core..fmt..Debug$GT$3fmt17h0123456789abcdefE"(ptr, ptr)
declare i1 @"_ZN42_$LT$u32$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE"(ptr, ptr)

; --- &dyn Shape: <Sq as Shape>::area allocates.
define internal i32 @"_ZN40_$LT$demo..Sq$u20$as$u20$demo..Shape$GT$4area17h0123456789abcdefE"(ptr %self) !dbg !14 {
  %b = call ptr @__rust_alloc(i64 4, i64 4), !dbg !15
  ret i32 0
}
@vtable.Sq = internal constant { ptr, i64, i64, ptr } { ptr null, i64 4, i64 4, ptr @"_ZN40_$LT$demo..Sq$u20$as$u20$demo..Shape$GT$4area17h0123456789abcdefE" }

define internal i32 @_ZN4demo4pick17h0123456789abcdefE(ptr %data, ptr %vtable) !dbg !12 {
  %slot = getelementptr inbounds i8, ptr %vtable, i64 24, !dbg !13
  %area = load ptr, ptr %slot, !dbg !13
  %r = call i32 %area(ptr %data), !dbg !13
  ret i32 %r
}
define internal void @_ZN4demo6shapes17h0123456789abcdefE() !dbg !10 {
  %sq = alloca i32, align 4
  %a = call i32 @_ZN4demo4pick17h0123456789abcdefE(ptr %sq, ptr @vtable.Sq), !dbg !11
  ret void
}
define ptx_kernel void @_ZN4demo27__oxide_kernel_entry_shapes17h0123456789abcdefE() {
  call void @_ZN4demo6shapes17h0123456789abcdefE()
  ret void
}

; --- a panic message: `.unwrap()` on a Result<_, String>, `assert!(.., "{}", i)`.
define internal void @"_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17h0123456789abcdefE"(ptr %s) {
  call void @__rust_dealloc(ptr %s, i64 1, i64 1)
  ret void
}
@vtable.String.Debug = internal constant { ptr, i64, i64, ptr } { ptr @"_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17h0123456789abcdefE", i64 24, i64 8, ptr @"_ZN58_$LT$alloc..string..String$u20$as$u20$core..fmt..Debug$GT$3fmt17h0123456789abcdefE" }

; The device body LowerPanics gives it: only the location is read.
define internal void @_ZN4core6result13unwrap_failed17h0123456789abcdefE(ptr %msg, i64 %len, ptr %err, ptr %vtable, ptr %loc) {
  %line = load i32, ptr %loc
  call void @llvm.trap()
  unreachable
}
declare void @llvm.trap()

; fmt::rt::Argument::new_display(&u32): keeps the formatter's address.
define internal void @_ZN4core3fmt2rt8Argument11new_display17h0123456789abcdefE(ptr sret([16 x i8]) %out, ptr %x) {
  store ptr %x, ptr %out
  %f = getelementptr inbounds i8, ptr %out, i64 8
  store ptr @"_ZN42_$LT$u32$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE", ptr %f
  ret void
}

define internal void @_ZN4demo7checked17h0123456789abcdefE(ptr %err, ptr %loc) !dbg !16 {
  %arg = alloca [16 x i8], align 8
  %i = alloca i32, align 4
  call void @_ZN4core3fmt2rt8Argument11new_display17h0123456789abcdefE(ptr %arg, ptr %i), !dbg !17
  call void @_ZN4core6result13unwrap_failed17h0123456789abcdefE(ptr null, i64 0, ptr %err, ptr @vtable.String.Debug, ptr %loc), !dbg !17
  ret void
}
define ptx_kernel void @_ZN4demo28__oxide_kernel_entry_checked17h0123456789abcdefE(ptr %err, ptr %loc) {
  call void @_ZN4demo7checked17h0123456789abcdefE(ptr %err, ptr %loc)
  ret void
}

; CHECK:      error: `__rust_alloc` cannot be called on the GPU: heap allocation (Box, Vec, String, format!) is not available in kernels
; CHECK-NEXT:   --> src/main.rs:30:17
; CHECK-NEXT:    = note: in kernel `demo::shapes`
; CHECK-NEXT:    = note: call chain: `demo::shapes` → `<demo::Sq as demo::Shape>::area` → `__rust_alloc`{{$}}
; CHECK-NOT:  demo::checked
; CHECK:      error: oxide could not compile the kernels for the GPU (1 error)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "shapes", scope: !2, file: !2, line: 8, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 9, column: 13, scope: !10)
!12 = distinct !DISubprogram(name: "pick", scope: !2, file: !2, line: 20, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!13 = !DILocation(line: 21, column: 5, scope: !12)
!14 = distinct !DISubprogram(name: "area", scope: !2, file: !2, line: 29, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!15 = !DILocation(line: 30, column: 17, scope: !14)
!16 = distinct !DISubprogram(name: "checked", scope: !2, file: !2, line: 40, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!17 = !DILocation(line: 41, column: 9, scope: !16)
