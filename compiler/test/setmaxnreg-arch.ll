; setmaxnreg exists only on the targets whose Targets.def row has the
; `setmaxnreg` feature (its MIN_SM in Stubs.def): architecture- and
; family-specific ones. sm_90a compiles it (the count is an immediate), and
; so does the family target sm_100f; plain sm_90 is a compile error that
; names the target to use, sm_120 one that names sm_120a (the oldest with
; the feature that is not older than the target asked for).
; RUN: %oxide-opt --arch sm_90a -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --arch sm_100f -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90a %s | FileCheck %s --check-prefix=PTX
; RUN: not %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs,reject-unavailable-stubs %s 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAIN
; RUN: not %oxide-opt --arch sm_120 -passes=lower-intrinsic-stubs,reject-unavailable-stubs %s 2>&1 >/dev/null | FileCheck %s --check-prefix=BLACKWELL

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_setmaxnreg_dec(i32)
declare void @__oxide_stub_setmaxnreg_inc(i32)

define ptx_kernel void @specialised(i1 %producer) !dbg !5 {
  br i1 %producer, label %dec, label %inc
dec:
  call void @__oxide_stub_setmaxnreg_dec(i32 40), !dbg !8
  ret void
inc:
  call void @__oxide_stub_setmaxnreg_inc(i32 232), !dbg !9
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/main.rs", directory: "/x")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "specialised", scope: !1, file: !1, line: 3, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!6 = !DISubroutineType(types: !{})
!8 = !DILocation(line: 5, column: 9, scope: !5)
!9 = !DILocation(line: 7, column: 9, scope: !5)
; IR: call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40) #[[C:[0-9]+]]
; IR: call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 232) #[[C]]
; IR: attributes #[[C]] = { convergent }
; PTX: .target sm_90a
; PTX-LABEL: .entry specialised(
; PTX: setmaxnreg.dec.sync.aligned.u32 40;
; PTX: setmaxnreg.inc.sync.aligned.u32 232;
; Each stub's error at its call, in the order of the code.
; PLAIN: error: `setmaxnreg_dec` needs a target with setmaxnreg (sm_90a, sm_100a, sm_100f, {{.*}}), but the kernels are being built for sm_90
; PLAIN-NEXT: --> src/main.rs:5:9
; PLAIN-NEXT: = note: build for one: `cargo oxide build --arch sm_90a` (or `arch` under [package.metadata.oxide], or OXIDE_ARCH); its PTX runs only on that GPU
; PLAIN: error: `setmaxnreg_inc` needs a target with setmaxnreg (sm_90a, {{.*}}), but the kernels are being built for sm_90
; PLAIN-NEXT: --> src/main.rs:7:9
; BLACKWELL: error: `setmaxnreg_{{inc|dec}}` needs a target with setmaxnreg ({{.*}}), but the kernels are being built for sm_120
; BLACKWELL: = note: build for one: `cargo oxide build --arch sm_120a`
; The way out names the feature to test:
; RUN: not %oxide-opt --ptx --arch sm_90 %s 2>&1 | FileCheck %s --check-prefix=HINT
; HINT: = note: or keep the call behind `if arch::has(Feature::Setmaxnreg) { … }` (cuda_device::arch), which this target fails
