; The whole device compile on a small kernel: the PTX has one .entry with
; one .param byte array per Rust parameter, reads tid.x, and its barrier,
; which every thread reaches (no branch before it), is the aligned
; `bar.sync 0` (AlignBarriers; align-barriers.ll has the other cases).
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()
declare void @__oxide_stub_sync_threads()

define internal void @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE(ptr %0, ptr %1) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 4, i64 4)
  %slice = load ptr, ptr %0
  %add = load i32, ptr %1
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  %v = load i32, ptr %p
  call void @__oxide_stub_sync_threads()
  %r = add i32 %v, %add
  store i32 %r, ptr %p
  ret void
}
; The host takes the wrapper's address at the launch site; that reference is
; also what makes the IR linker keep the internal wrapper.
@launch_site = global ptr @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE
define void @host_main() #1 {
  ret void
}
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { uwtable "target-cpu"="x86-64" }

; CHECK: ; kernel _ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE host=_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE params=2 copies=1
; CHECK: .target sm_90
; CHECK: .visible .entry _ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE(
; CHECK-NEXT: .param .align 8 .b8 {{.*}}_param_0[16],
; CHECK-NEXT: .param .align 4 .b8 {{.*}}_param_1[4]
; CHECK: mov.u32 {{.*}}%tid.x
; CHECK: bar.sync 0;
; CHECK-NOT: barrier.sync
; CHECK-NOT: host_main
