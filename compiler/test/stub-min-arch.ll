; A stub whose instruction the target architecture lacks is a compile error
; pointing at the call, not a backend crash.
; RUN: not %oxide-opt --arch sm_80 -passes=lower-intrinsic-stubs,reject-unavailable-stubs %s 2>&1 >/dev/null | FileCheck %s

declare i1 @__oxide_stub_elect_one(i32)

define i1 @user() !dbg !5 {
  %e = call i1 @__oxide_stub_elect_one(i32 -1), !dbg !8
  ret i1 %e
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/main.rs", directory: "/x")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "user", scope: !1, file: !1, line: 3, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!6 = !DISubroutineType(types: !{})
!8 = !DILocation(line: 4, column: 13, scope: !5)
; CHECK: error: `elect_one` needs sm_90 or newer, but the kernels are being built for sm_80
; CHECK-NEXT: --> src/main.rs:4:13
; CHECK-NEXT: = note: build for a newer GPU: `cargo oxide build --arch sm_90` (or `arch` under [package.metadata.oxide], or OXIDE_ARCH)
