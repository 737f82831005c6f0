; tcgen05 (Blackwell's tensor memory and fifth-generation MMA) exists on the
; targets whose Targets.def row has the `tcgen05` feature: sm_100a/f,
; sm_103a/f, sm_110a/f. Each stub becomes its PTX instruction, ptxas accepts
; the kernel for sm_100a and for the family target sm_100f (compile-only:
; no Blackwell GPU runs it here), and a Hopper target is a compile error at
; the user's line that names a target to build for, not a ptxas failure.
; RUN: %oxide-opt --ptx --arch sm_100a %s | FileCheck %s --check-prefix=PTX
; RUN: %if ptxas %{ %oxide-opt --ptx --assemble --arch sm_100a %s | FileCheck %s --check-prefix=PTXAS %}
; RUN: %if ptxas %{ %oxide-opt --ptx --assemble --arch sm_100f %s | FileCheck %s --check-prefix=PTXAS %}
; RUN: not %oxide-opt --ptx --arch sm_90a %s 2>&1 | FileCheck %s --check-prefix=HOPPER
; RUN: not %oxide-opt --ptx --arch sm_120a %s 2>&1 | FileCheck %s --check-prefix=SM120A

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_tcgen05_alloc(i32, i32)
declare void @__oxide_stub_tcgen05_dealloc(i32, i32)
declare void @__oxide_stub_tcgen05_relinquish_alloc_permit()
declare void @__oxide_stub_tcgen05_fence_before_thread_sync()
declare void @__oxide_stub_tcgen05_fence_after_thread_sync()
declare void @__oxide_stub_tcgen05_wait_ld()
declare void @__oxide_stub_tcgen05_wait_st()
declare i32 @__oxide_stub_tcgen05_ld_32x32b_x1(i32)
declare i64 @__oxide_stub_tcgen05_ld_32x32b_x2(i32)
declare void @__oxide_stub_tcgen05_st_32x32b_x1(i32, i32)
declare void @__oxide_stub_tcgen05_st_32x32b_x2(i32, i64)
declare void @__oxide_stub_tcgen05_mma_f16(i32, i64, i64, i32, i32)
declare void @__oxide_stub_tcgen05_mma_tf32(i32, i64, i64, i32, i32)
declare void @__oxide_stub_tcgen05_mma_f8f6f4(i32, i64, i64, i32, i32)
declare void @__oxide_stub_tcgen05_commit(i32)

; The shape of a tcgen05 kernel: allocate columns (the address lands in
; shared memory at %slot), MMA into them, commit to an mbarrier, read the
; result back through registers, free.
define ptx_kernel void @tmem(i32 %slot, i32 %taddr, i64 %da, i64 %db, i32 %idesc, i32 %acc, i32 %bar, ptr %out) {
  call void @__oxide_stub_tcgen05_alloc(i32 %slot, i32 64), !dbg !8
  call void @__oxide_stub_tcgen05_relinquish_alloc_permit(), !dbg !8
  call void @__oxide_stub_tcgen05_fence_after_thread_sync(), !dbg !8
  call void @__oxide_stub_tcgen05_mma_f16(i32 %taddr, i64 %da, i64 %db, i32 %idesc, i32 %acc), !dbg !9
  call void @__oxide_stub_tcgen05_mma_tf32(i32 %taddr, i64 %da, i64 %db, i32 %idesc, i32 1), !dbg !9
  call void @__oxide_stub_tcgen05_mma_f8f6f4(i32 %taddr, i64 %da, i64 %db, i32 %idesc, i32 0), !dbg !9
  call void @__oxide_stub_tcgen05_commit(i32 %bar), !dbg !9
  %one = call i32 @__oxide_stub_tcgen05_ld_32x32b_x1(i32 %taddr), !dbg !10
  %two = call i64 @__oxide_stub_tcgen05_ld_32x32b_x2(i32 %taddr), !dbg !10
  call void @__oxide_stub_tcgen05_wait_ld(), !dbg !10
  call void @__oxide_stub_tcgen05_st_32x32b_x1(i32 %taddr, i32 %one), !dbg !10
  call void @__oxide_stub_tcgen05_st_32x32b_x2(i32 %taddr, i64 %two), !dbg !10
  call void @__oxide_stub_tcgen05_wait_st(), !dbg !10
  store i32 %one, ptr %out
  %hi = getelementptr i64, ptr %out, i64 1
  store i64 %two, ptr %hi
  call void @__oxide_stub_tcgen05_fence_before_thread_sync(), !dbg !11
  call void @__oxide_stub_tcgen05_dealloc(i32 %taddr, i32 64), !dbg !11
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, producer: "rustc", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "src/main.rs", directory: "/work/app")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "tmem", scope: !1, file: !1, line: 10, type: !6, spFlags: DISPFlagDefinition, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 12, column: 9, scope: !5)
!9 = !DILocation(line: 14, column: 9, scope: !5)
!10 = !DILocation(line: 16, column: 9, scope: !5)
!11 = !DILocation(line: 18, column: 9, scope: !5)

; PTX: .target sm_100a
; PTX-LABEL: .entry tmem(
; PTX: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r{{[0-9]+}}], %r{{[0-9]+}};
; PTX: tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
; PTX: tcgen05.fence::after_thread_sync;
; PTX: tcgen05.mma.cta_group::1.kind::f16 [%r{{[0-9]+}}], %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}}, p;
; PTX: tcgen05.mma.cta_group::1.kind::tf32
; PTX: tcgen05.mma.cta_group::1.kind::f8f6f4
; PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r{{[0-9]+}}];
; PTX: tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r{{[0-9]+}}}, [%r{{[0-9]+}}];
; PTX: tcgen05.ld.sync.aligned.32x32b.x2.b32 {lo, hi}
; PTX: tcgen05.wait::ld.sync.aligned;
; PTX: tcgen05.st.sync.aligned.32x32b.x1.b32 [%r{{[0-9]+}}], {%r{{[0-9]+}}};
; PTX: tcgen05.st.sync.aligned.32x32b.x2.b32 [%r{{[0-9]+}}], {lo, hi};
; PTX: tcgen05.wait::st.sync.aligned;
; PTX: tcgen05.fence::before_thread_sync;
; PTX: tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r{{[0-9]+}}, %r{{[0-9]+}};
; PTXAS: ; ptxas accepted it: a cubin
; HOPPER: error: `tcgen05_alloc` needs a target with tcgen05 (sm_100a, sm_100f, {{.*}}), but the kernels are being built for sm_90a
; HOPPER: --> src/main.rs:12:9
; HOPPER: = note: build for one: `cargo oxide build --arch sm_100a`
; SM120A: error: `tcgen05_alloc` needs a target with tcgen05 ({{.*}}), but the kernels are being built for sm_120a
