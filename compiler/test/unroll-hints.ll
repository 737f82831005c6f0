; unroll!/#[unroll] markers (the stub `unroll` at the top of a loop's body)
; become the loop metadata of a `#pragma unroll`, on the latch of the
; innermost loop that holds each, and are deleted: 4 → a count, 0 → full
; (with the hint's Rust line for CheckUnrollHints), 1 → disable. The
; unroller honours them: the fully unrolled loop is gone, the loop of
; unknown trip count has four copies of its body per iteration, the
; disabled one stays rolled and tells ptxas so.
; RUN: %oxide-opt -passes=lower-unroll-hints %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt -passes='lower-unroll-hints,lower-intrinsic-stubs,retarget,default<O3>,check-unroll-hints' --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_unroll(i32)

; for i in 0..8 { out[i] = a[i] * 3 }, fully unrolled.
define ptx_kernel void @full(ptr %a, ptr %out) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp ult i64 %i, 8
  br i1 %more, label %body, label %done
body:
  call void @__oxide_stub_unroll(i32 0), !dbg !8
  %pa = getelementptr inbounds i32, ptr %a, i64 %i
  %v = load i32, ptr %pa
  %m = mul i32 %v, 3
  %po = getelementptr inbounds i32, ptr %out, i64 %i
  store i32 %m, ptr %po
  %next = add nuw i64 %i, 1
  br label %head
done:
  ret void
}

; for i in 0..n { out[i] = a[i] + 7 }, unrolled by 4.
define ptx_kernel void @count4(ptr %a, ptr %out, i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %done
body:
  call void @__oxide_stub_unroll(i32 4)
  %pa = getelementptr inbounds i32, ptr %a, i64 %i
  %v = load i32, ptr %pa
  %m = add i32 %v, 7
  %po = getelementptr inbounds i32, ptr %out, i64 %i
  store i32 %m, ptr %po
  %next = add nuw i64 %i, 1
  br label %head
done:
  ret void
}

; for i in 0..4 { out[i] = a[i] - 5 }, kept rolled though its trip count is constant.
define ptx_kernel void @rolled(ptr %a, ptr %out) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp ult i64 %i, 4
  br i1 %more, label %body, label %done
body:
  call void @__oxide_stub_unroll(i32 1)
  %pa = getelementptr inbounds i32, ptr %a, i64 %i
  %v = load i32, ptr %pa
  %m = sub i32 %v, 5
  %po = getelementptr inbounds i32, ptr %out, i64 %i
  store i32 %m, ptr %po
  %next = add nuw i64 %i, 1
  br label %head
done:
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!9}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/main.rs", directory: "/work")
!5 = distinct !DISubprogram(name: "full", scope: !1, file: !1, line: 10, type: !6, spFlags: DISPFlagDefinition, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 12, column: 5, scope: !5)
!9 = !{i32 2, !"Debug Info Version", i32 3}

; IR-LABEL: define ptx_kernel void @full(
; IR-NOT: __oxide_stub_unroll
; IR: br label %head, !llvm.loop ![[FULL:[0-9]+]]
; IR-LABEL: define ptx_kernel void @count4(
; IR: br label %head, !llvm.loop ![[COUNT:[0-9]+]]
; IR-LABEL: define ptx_kernel void @rolled(
; IR: br label %head, !llvm.loop ![[ROLLED:[0-9]+]]
; IR: ![[FULL]] = distinct !{![[FULL]], ![[FULLPROP:[0-9]+]], ![[AT:[0-9]+]]}
; IR: ![[FULLPROP]] = !{!"llvm.loop.unroll.full"}
; IR: ![[AT]] = !{!"oxide.unroll.full", !"src/main.rs:12:5"}
; IR: ![[COUNT]] = distinct !{![[COUNT]], ![[COUNTPROP:[0-9]+]]}
; IR: ![[COUNTPROP]] = !{!"llvm.loop.unroll.count", i32 4}
; IR: ![[ROLLED]] = distinct !{![[ROLLED]], ![[DISABLE:[0-9]+]]}
; IR: ![[DISABLE]] = !{!"llvm.loop.unroll.disable"}

; PTX-LABEL: .entry full(
; PTX-NOT: bra
; PTX-COUNT-8: mul.lo.s32
; PTX-NOT: bra
; PTX: ret;
; PTX-LABEL: .entry count4(
; PTX: $L__BB{{[0-9]+}}_{{[0-9]+}}:
; PTX-COUNT-4: add.s32 {{.*}}, 7;
; PTX: .pragma "nounroll";
; PTX-LABEL: .entry rolled(
; PTX: .pragma "nounroll";
; PTX: add.s32 {{.*}}, -5;
; PTX-NOT: add.s32 {{.*}}, -5;
; PTX: ret;
