; An architecture error inside cuda-device's own wrapper points at the user's
; call of the wrapper, also when cuda-device was compiled as a path
; dependency outside the workspace (file names relative to its directory:
; `src/warpgroup.rs` in `/deps/cuda-device`): through a call of the wrapper,
; and through the frame the wrapper was inlined into.
; RUN: not %oxide-opt --arch sm_90 -passes=lower-intrinsic-stubs,reject-unavailable-stubs %s 2>&1 >/dev/null | FileCheck %s

declare void @__oxide_stub_setmaxnreg_inc(i32)
declare void @__oxide_stub_setmaxnreg_dec(i32)

define internal void @increase() !dbg !10 {
  call void @__oxide_stub_setmaxnreg_inc(i32 232), !dbg !12
  ret void
}

define void @user() !dbg !5 {
  call void @increase(), !dbg !8
  call void @__oxide_stub_setmaxnreg_dec(i32 40), !dbg !14
  ret void
}

!llvm.dbg.cu = !{!0, !20}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/main.rs", directory: "/app")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "user", scope: !1, file: !1, line: 3, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!6 = !DISubroutineType(types: !{})
!8 = !DILocation(line: 9, column: 5, scope: !5)
!9 = !DIFile(filename: "src/warpgroup.rs", directory: "/deps/cuda-device")
!10 = distinct !DISubprogram(name: "increase", scope: !9, file: !9, line: 40, type: !6, unit: !20, spFlags: DISPFlagDefinition)
!11 = distinct !DISubprogram(name: "decrease", scope: !9, file: !9, line: 50, type: !6, unit: !20, spFlags: DISPFlagDefinition)
!12 = !DILocation(line: 45, column: 5, scope: !10)
!13 = !DILocation(line: 12, column: 7, scope: !5)
!14 = !DILocation(line: 55, column: 5, scope: !11, inlinedAt: !13)
!20 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !9, emissionKind: LineTablesOnly)
; CHECK-DAG: error: `setmaxnreg_inc` needs a target with setmaxnreg (sm_90a,
; CHECK-DAG: --> src/main.rs:9:5
; CHECK-DAG: error: `setmaxnreg_dec` needs a target with setmaxnreg (sm_90a,
; CHECK-DAG: --> src/main.rs:12:7
; CHECK-NOT: warpgroup.rs
