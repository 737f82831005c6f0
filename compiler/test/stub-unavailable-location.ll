; A stub the target lacks that O3 does not delete is an error after O3, at
; the user's line recorded before the debug info was stripped: the call of
; cuda-device's wrapper, not the wrapper (which O3 inlined); once per stub,
; at its first call (line 7; line 8 calls the stub itself).
; A test of `target_sm` that the target passes keeps the call.
; RUN: not %oxide-opt --ptx --arch sm_80 %s 2>&1 | FileCheck %s

target triple = "nvptx64-nvidia-cuda"

declare i32 @__oxide_stub_target_sm()
declare void @__oxide_stub_prefetch_l2_bulk(i64, i32)

define internal void @prefetch_bulk(i64 %a) !dbg !10 {
  call void @__oxide_stub_prefetch_l2_bulk(i64 %a, i32 256), !dbg !12
  ret void
}

define ptx_kernel void @ahead(ptr %data) !dbg !5 {
  %a = ptrtoint ptr %data to i64
  %sm = call i32 @__oxide_stub_target_sm()
  %new = icmp uge i32 %sm, 75
  br i1 %new, label %bulk, label %done
bulk:
  call void @prefetch_bulk(i64 %a), !dbg !8
  call void @__oxide_stub_prefetch_l2_bulk(i64 %a, i32 512), !dbg !9
  br label %done
done:
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/main.rs", directory: "/x")
!2 = !DIFile(filename: "src/cache.rs", directory: "/deps/cuda-device")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "ahead", scope: !1, file: !1, line: 3, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!6 = !DISubroutineType(types: !{})
!8 = !DILocation(line: 7, column: 9, scope: !5)
!9 = !DILocation(line: 8, column: 9, scope: !5)
!10 = distinct !DISubprogram(name: "prefetch_l2_bulk", scope: !2, file: !2, line: 40, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!12 = !DILocation(line: 41, column: 5, scope: !10)
; CHECK: error: `prefetch_l2_bulk` needs sm_90 or newer, but the kernels are being built for sm_80
; CHECK-NEXT: --> src/main.rs:7:9
; CHECK-NEXT: = note: build for a newer GPU: `cargo oxide build --arch sm_90` (or `arch` under [package.metadata.oxide], or OXIDE_ARCH)
; CHECK-NEXT: = note: or keep the call behind `if arch::compute_capability() >= 90 { … }` (cuda_device::arch), which this target fails
; CHECK-NOT: needs sm_90
; CHECK: error: oxide could not compile the kernels for the GPU (1 error)
