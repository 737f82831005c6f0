; The whole device compile: a `&[f32]` parameter (rustc passes its pointer
; `noalias readonly`) is read with the non-coherent `ld.global.nc`, like
; nvcc's `const float *__restrict__`; a `&[AtomicU32]`-like slice (no
; attributes: interior mutability) keeps `ld.global`; the output is
; `st.global`.
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()

define internal void @_ZN4demo4scan17h0123456789abcdefE(ptr noalias noundef nonnull readonly align 4 %in.0, i64 %in.1, ptr noundef nonnull align 4 %cells.0, i64 %cells.1, ptr %out.0, i64 %out.1) unnamed_addr #1 {
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %pa = getelementptr inbounds float, ptr %in.0, i64 %i
  %a = load float, ptr %pa, align 4
  %pc = getelementptr inbounds i32, ptr %cells.0, i64 %i
  %c = load i32, ptr %pc, align 4
  %cf = uitofp i32 %c to float
  %r = fadd float %a, %cf
  %po = getelementptr inbounds float, ptr %out.0, i64 %i
  store float %r, ptr %po, align 4
  ret void
}

define internal void @_ZN4demo25__oxide_kernel_entry_scan17h0123456789abcdefE(ptr %0, ptr %1, ptr %2) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 2, i64 16, i64 8)
  %in.0 = load ptr, ptr %0, align 8
  %l0 = getelementptr inbounds i8, ptr %0, i64 8
  %in.1 = load i64, ptr %l0, align 8
  %cells.0 = load ptr, ptr %1, align 8
  %l1 = getelementptr inbounds i8, ptr %1, i64 8
  %cells.1 = load i64, ptr %l1, align 8
  %out.0 = load ptr, ptr %2, align 8
  %l2 = getelementptr inbounds i8, ptr %2, i64 8
  %out.1 = load i64, ptr %l2, align 8
  call void @_ZN4demo4scan17h0123456789abcdefE(ptr noalias noundef nonnull readonly align 4 %in.0, i64 %in.1, ptr noundef nonnull align 4 %cells.0, i64 %cells.1, ptr %out.0, i64 %out.1)
  ret void
}
@launch_site = global ptr @_ZN4demo25__oxide_kernel_entry_scan17h0123456789abcdefE
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { "target-cpu"="x86-64" }

; CHECK: .visible .entry _ZN4demo25__oxide_kernel_entry_scan17h0123456789abcdefE(
; CHECK-DAG: ld.global.nc.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}];
; CHECK-DAG: ld.global.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}];
; CHECK-DAG: st.global.b32 [{{%rd[0-9]+}}], {{%r[0-9]+}};
; CHECK-NOT: oxide-readonly-pointers
