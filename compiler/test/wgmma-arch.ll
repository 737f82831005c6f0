; wgmma exists on sm_90a only (the one target with the `wgmma` feature in
; Targets.def): building a kernel that uses it for sm_90 (or sm_100a, which
; has other architecture-specific instructions) is an error that names the
; user's code, not a ptxas failure.
; RUN: not %oxide-opt --ptx --arch sm_90 %s 2>&1 | FileCheck %s
; RUN: not %oxide-opt --ptx --arch sm_80 %s 2>&1 | FileCheck %s --check-prefix=SM80
; RUN: not %oxide-opt --ptx --arch sm_100a %s 2>&1 | FileCheck %s --check-prefix=SM100A

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_wgmma_m64n64k16_f32_bf16(ptr, i64, i64, i32)

define ptx_kernel void @mma(ptr %acc, i64 %da, i64 %db) {
  call void @__oxide_stub_wgmma_m64n64k16_f32_bf16(ptr %acc, i64 %da, i64 %db, i32 1), !dbg !8
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "src/main.rs", directory: "/work/app")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "mma", scope: !1, file: !1, line: 10, type: !6, spFlags: DISPFlagDefinition, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 12, column: 9, scope: !5)

; CHECK: error: wgmma needs sm_90a, but the kernels are being built for sm_90
; CHECK: src/main.rs:12:9
; CHECK: build with `--arch sm_90a`
; SM80: error: wgmma needs sm_90a, but the kernels are being built for sm_80
; SM100A: error: wgmma needs sm_90a, but the kernels are being built for sm_100a
; CHECK: = note: or keep the call behind `if arch::has(Feature::Wgmma) { … }` (cuda_device::arch), which this target fails
