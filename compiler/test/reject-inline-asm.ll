; Rust's asm! is written for the host CPU. In the user's code it is rejected
; at its own line; inside a library function the user called, the error names
; that call.
; RUN: not %oxide-opt -passes=reject-unsupported %s 2>&1 >/dev/null | FileCheck %s

; A library function whose body is x86 assembly.
define internal void @_ZN4core4hint9spin_loop17h0123456789abcdefE() !dbg !20 {
  call void asm sideeffect "pause", "~{memory}"(), !dbg !21
  ret void
}

define internal void @_ZN4demo8with_asm17h0123456789abcdefE(i32 %x) !dbg !10 {
  %y = call i32 asm "add ${0:k}, 1", "=r,0"(i32 %x), !dbg !11
  call void @_ZN4core4hint9spin_loop17h0123456789abcdefE(), !dbg !12
  ret void
}
define ptx_kernel void @_ZN4demo29__oxide_kernel_entry_with_asm17h0123456789abcdefE() {
  call void @_ZN4demo8with_asm17h0123456789abcdefE(i32 1)
  ret void
}

; CHECK:      error: inline assembly (asm!) is written for the host CPU and cannot be compiled for the GPU
; CHECK-NEXT:   --> src/main.rs:10:14
; CHECK-NEXT:    = note: in kernel `demo::with_asm`
; CHECK-NEXT:    = note: call chain: `demo::with_asm`{{$}}
; CHECK:      error: `core::hint::spin_loop` cannot be called on the GPU: it contains inline assembly (asm!) written for the host CPU
; CHECK-NEXT:   --> src/main.rs:12:5
; CHECK-NEXT:    = note: in kernel `demo::with_asm`
; CHECK-NEXT:    = note: call chain: `demo::with_asm` → `core::hint::spin_loop`{{$}}
; CHECK:      error: oxide could not compile the kernels for the GPU (2 errors)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !2, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!3 = !DIFile(filename: "/rustc/0123/library/core/src/hint.rs", directory: "")
!4 = !DISubroutineType(types: !5)
!5 = !{}
!10 = distinct !DISubprogram(name: "with_asm", scope: !2, file: !2, line: 8, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!11 = !DILocation(line: 10, column: 14, scope: !10)
!12 = !DILocation(line: 12, column: 5, scope: !10)
!20 = distinct !DISubprogram(name: "spin_loop", scope: !3, file: !3, line: 200, type: !4, unit: !1, spFlags: DISPFlagDefinition)
!21 = !DILocation(line: 201, column: 5, scope: !20)
