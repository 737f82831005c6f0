; An x86 intrinsic (`llvm.x86.*`) is an instruction of the host CPU: the
; kernel that reaches one is a compile error naming the core::arch function
; the user called, at the user's line, not a crash in instruction selection.
; Target-independent and NVVM intrinsics stay allowed.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

declare i64 @llvm.x86.rdtsc()
declare float @llvm.sqrt.f32(float)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

; core::arch::x86_64::_rdtsc, a line of the standard library.
define internal i64 @_ZN4core9core_arch3x865rdtsc6_rdtsc17h0123456789abcdefE() !dbg !20 {
  %t = call i64 @llvm.x86.rdtsc(), !dbg !21
  ret i64 %t
}

define internal void @_ZN4demo6cycles17h0123456789abcdefE(float %x) !dbg !10 {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x(), !dbg !11
  %r = call float @llvm.sqrt.f32(float %x), !dbg !11
  %t = call i64 @_ZN4core9core_arch3x865rdtsc6_rdtsc17h0123456789abcdefE(), !dbg !12
  ret void
}

define ptx_kernel void @_ZN4demo27__oxide_kernel_entry_cycles17h0123456789abcdefE() {
  call void @_ZN4demo6cycles17h0123456789abcdefE(float 2.0)
  ret void
}

; CHECK:      error: `core::core_arch::x86::rdtsc::_rdtsc` cannot be called on the GPU: x86 intrinsics are instructions of the host CPU, which the GPU does not have
; CHECK-NEXT:   --> src/main.rs:9:22
; CHECK-NEXT:    = note: in kernel `demo::cycles`
; CHECK-NEXT:    = note: call chain: `demo::cycles` → `core::core_arch::x86::rdtsc::_rdtsc`{{$}}
; CHECK-NOT:  error:
; CHECK:      error: oxide could not compile the kernels for the GPU (1 error)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DIFile(filename: "/rustc/0123/library/core/src/../../stdarch/crates/core_arch/src/x86/rdtsc.rs", directory: "")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "cycles", scope: !2, file: !2, line: 8, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 8, column: 5, scope: !10)
!12 = !DILocation(line: 9, column: 22, scope: !10)
!20 = distinct !DISubprogram(name: "_rdtsc", scope: !3, file: !3, line: 24, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!21 = !DILocation(line: 25, column: 5, scope: !20)
