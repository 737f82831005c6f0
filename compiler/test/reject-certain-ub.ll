; A kernel whose every path from the entry ends in an `unreachable` that no
; call leads to (undefined behaviour O3 proved) is an error naming the kernel,
; at the instruction's Rust line when line tables survived, else at the
; kernel's line that record-kernel-sources kept. An `unreachable` behind a
; condition, a panic (a call that does not return, then `unreachable`) and a
; loop that may spin forever are left alone.
; RUN: not %oxide-opt -passes=reject-certain-ub %s 2>&1 >/dev/null | FileCheck %s
; RUN: %oxide-opt -passes=record-kernel-sources %s | FileCheck %s --check-prefix=RECORD

declare void @panic_report() noreturn
declare i1 @cond()

; unreachable_unchecked() reached at once: the entry itself is `unreachable`.
define ptx_kernel void @at_once() "oxide-kernel-source"="src/main.rs:7" {
entry:
  unreachable
}
; CHECK: error: kernel `h_at_once` cannot run without undefined behaviour
; CHECK-NEXT: --> src/main.rs:7
; CHECK: = note: in kernel `h_at_once`
; CHECK: = note: the compiler proved that every run of the kernel reaches undefined behaviour
; CHECK: = note: to see the line of the undefined behaviour, build with OXIDE_DEVICE_DEBUG=lines

; Both arms of a branch end in undefined behaviour; line tables kept.
define ptx_kernel void @both_arms() !dbg !11 {
entry:
  %c = call i1 @cond(), !dbg !20
  br i1 %c, label %a, label %b
a:
  unreachable, !dbg !21
b:
  unreachable
}
; CHECK: error: kernel `h_both_arms` cannot run without undefined behaviour
; CHECK-NEXT: --> src/main.rs:12:9
; CHECK-NOT: OXIDE_DEVICE_DEBUG

; A match arm rustc marks unreachable: only one path reaches it.
define ptx_kernel void @guarded() {
entry:
  %c = call i1 @cond()
  br i1 %c, label %bad, label %ok
bad:
  unreachable
ok:
  ret void
}
; CHECK-NOT: h_guarded

; A kernel that always panics: defined behaviour, reported at run time.
define ptx_kernel void @always_panics() {
entry:
  call void @panic_report()
  unreachable
}
; CHECK-NOT: h_always_panics

; A loop that may spin forever before the undefined behaviour.
define ptx_kernel void @spins() {
entry:
  br label %loop
loop:
  %c = call i1 @cond()
  br i1 %c, label %loop, label %bad
bad:
  unreachable
}
; CHECK-NOT: h_spins

; The entry calls the #[kernel] wrapper, whose subprogram has the Rust line.
define internal void @wrapper() !dbg !10 {
  ret void
}
define ptx_kernel void @recorded() {
entry:
  call void @wrapper()
  ret void
}
; RECORD: define ptx_kernel void @recorded() [[ATTRS:#[0-9]+]]
; RECORD: attributes [[ATTRS]] = { "oxide-kernel-source"="src/main.rs:30" }

!oxide.kernels = !{!0, !1, !2, !3, !4, !5}
!0 = !{ptr @at_once, !"h_at_once", i64 0}
!1 = !{ptr @both_arms, !"h_both_arms", i64 0}
!2 = !{ptr @guarded, !"h_guarded", i64 0}
!3 = !{ptr @always_panics, !"h_always_panics", i64 0}
!4 = !{ptr @spins, !"h_spins", i64 0}
!5 = !{ptr @recorded, !"h_recorded", i64 0}

!llvm.dbg.cu = !{!30}
!llvm.module.flags = !{!33}
!30 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !31, producer: "rustc", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)
!31 = !DIFile(filename: "src/main.rs", directory: "/work/demo")
!32 = !DISubroutineType(types: !{})
!33 = !{i32 2, !"Debug Info Version", i32 3}
!10 = distinct !DISubprogram(name: "wrapper", scope: !31, file: !31, line: 30, type: !32, spFlags: DISPFlagDefinition, unit: !30)
!11 = distinct !DISubprogram(name: "both_arms", scope: !31, file: !31, line: 10, type: !32, spFlags: DISPFlagDefinition, unit: !30)
!20 = !DILocation(line: 11, column: 5, scope: !11)
!21 = !DILocation(line: 12, column: 9, scope: !11)
