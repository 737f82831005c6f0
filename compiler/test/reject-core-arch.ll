; A core::arch::x86_64 function the user calls is x86 code even when its body
; is portable IR (`_mm_sqrt_ps` is `llvm.sqrt.v4f32`): rejected at the user's
; call. The same function used inside the standard library is the library's
; business and is not reported.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

declare <4 x float> @llvm.sqrt.v4f32(<4 x float>)

; core::arch::x86_64::_mm_sqrt_ps
define internal <4 x float> @_ZN4core9core_arch3x863sse11_mm_sqrt_ps17h0123456789abcdefE(<4 x float> %a) !dbg !20 {
  %r = call <4 x float> @llvm.sqrt.v4f32(<4 x float> %a), !dbg !21
  ret <4 x float> %r
}

; A library function that uses it internally.
define internal <4 x float> @_ZN4core3str5count14do_count_chars17h0123456789abcdefE(<4 x float> %a) !dbg !22 {
  %r = call <4 x float> @_ZN4core9core_arch3x863sse11_mm_sqrt_ps17h0123456789abcdefE(<4 x float> %a), !dbg !23
  ret <4 x float> %r
}

define internal void @_ZN4demo3sse17h0123456789abcdefE(<4 x float> %a) !dbg !10 {
  %r = call <4 x float> @_ZN4core9core_arch3x863sse11_mm_sqrt_ps17h0123456789abcdefE(<4 x float> %a), !dbg !11
  ret void
}
define ptx_kernel void @_ZN4demo24__oxide_kernel_entry_sse17h0123456789abcdefE() {
  call void @_ZN4demo3sse17h0123456789abcdefE(<4 x float> zeroinitializer)
  ret void
}

define internal void @_ZN4demo5chars17h0123456789abcdefE(<4 x float> %a) !dbg !12 {
  %r = call <4 x float> @_ZN4core3str5count14do_count_chars17h0123456789abcdefE(<4 x float> %a), !dbg !13
  ret void
}
define ptx_kernel void @_ZN4demo26__oxide_kernel_entry_chars17h0123456789abcdefE() {
  call void @_ZN4demo5chars17h0123456789abcdefE(<4 x float> zeroinitializer)
  ret void
}

; CHECK:      error: `core::core_arch::x86::sse::_mm_sqrt_ps` cannot be called on the GPU: x86 intrinsics are instructions of the host CPU
; CHECK-NEXT:   --> src/main.rs:10:22
; CHECK-NEXT:    = note: in kernel `demo::sse`
; CHECK-NEXT:    = note: call chain: `demo::sse` → `core::core_arch::x86::sse::_mm_sqrt_ps`{{$}}
; CHECK-NOT:  demo::chars
; CHECK:      error: oxide could not compile the kernels for the GPU (1 error)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DIFile(filename: "/rustc/0123/library/core/src/../../stdarch/crates/core_arch/src/x86/sse.rs", directory: "")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "sse", scope: !2, file: !2, line: 9, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 10, column: 22, scope: !10)
!12 = distinct !DISubprogram(name: "chars", scope: !2, file: !2, line: 20, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!13 = !DILocation(line: 21, column: 5, scope: !12)
!20 = distinct !DISubprogram(name: "_mm_sqrt_ps", scope: !3, file: !3, line: 200, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!21 = !DILocation(line: 201, column: 5, scope: !20)
!22 = distinct !DISubprogram(name: "do_count_chars", scope: !3, file: !3, line: 300, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!23 = !DILocation(line: 301, column: 5, scope: !22)
