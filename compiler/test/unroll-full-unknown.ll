; A full unroll hint on a loop whose trip count O3 cannot know is an error
; at the hint (with a count to use instead), not a loop silently left rolled.
; RUN: not %oxide-opt -passes='lower-unroll-hints,lower-intrinsic-stubs,retarget,default<O3>,check-unroll-hints' %s 2>&1 >/dev/null | FileCheck %s

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_unroll(i32)

define ptx_kernel void @unknown(ptr %a, i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %done
body:
  call void @__oxide_stub_unroll(i32 0), !dbg !8
  %p = getelementptr inbounds i32, ptr %a, i64 %i
  store i32 1, ptr %p
  %next = add nuw i64 %i, 1
  br label %head
done:
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!9}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/main.rs", directory: "/work")
!5 = distinct !DISubprogram(name: "unknown", scope: !1, file: !1, line: 10, type: !6, spFlags: DISPFlagDefinition, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 14, column: 9, scope: !5)
!9 = !{i32 2, !"Debug Info Version", i32 3}

; CHECK: error: this loop cannot be unrolled fully: its trip count is not a constant once the kernel is optimised
; CHECK-NEXT: --> src/main.rs:14:9
; CHECK: = note: give a count instead: `unroll!(4, …)` or `#[unroll(4)]`
