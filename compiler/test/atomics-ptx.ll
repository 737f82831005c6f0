; The whole device compile: a scoped atomic reaches its stub through a wrapper
; whose scope and ordering are parameters (as in cuda_device::atomic's
; unoptimised bitcode); after O3 inlined it, the kernel has one
; `atom.acquire.gpu.global.add.u32` and no stub. core::sync::atomic's
; `AtomicU32::swap(1, Acquire)` (system scope) is an acquire exchange at .sys,
; its `store(0, Release)` a release store, and `fetch_max(_, SeqCst)` on a
; shared array fence.sc + acq_rel at .sys on .shared.
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_atomic_rmw_u32(ptr, i32, i32, i32, i32)
declare i32 @__oxide_stub_thread_idx_x()

@_ZN4demo4TILE17h0123456789abcdefE = internal global [32 x i32] undef, section ".oxide.shared", align 16

; cuda_device::atomic: <AtomicU32 as ScopedAtomic>::fetch_add_scoped
define internal i32 @_ZN11cuda_device6atomic16fetch_add_scoped17h0123456789abcdefE(ptr %self, i32 %v, i32 %scope, i32 %order) {
  %r = call i32 @__oxide_stub_atomic_rmw_u32(ptr %self, i32 %v, i32 1, i32 %scope, i32 %order)
  ret i32 %r
}

define internal void @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %data = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %data, i64 %i
  ; Scope::Device, Ordering::Acquire
  %a = call i32 @_ZN11cuda_device6atomic16fetch_add_scoped17h0123456789abcdefE(ptr %p, i32 1, i32 1, i32 2)
  ; a spin lock with core's atomics
  br label %spin
spin:
  %old = atomicrmw xchg ptr %data, i32 1 acquire, align 4
  %held = icmp ne i32 %old, 0
  br i1 %held, label %spin, label %locked
locked:
  store atomic i32 0, ptr %data release, align 4
  %s = getelementptr i32, ptr @_ZN4demo4TILE17h0123456789abcdefE, i64 %i
  %m = atomicrmw max ptr %s, i32 %t seq_cst, align 4
  ret void
}
@launch_site = global ptr @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE
attributes #0 = { noinline "target-cpu"="x86-64" }

; CHECK: .visible .entry _ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE(
; CHECK-NOT: __oxide_stub
; CHECK: atom.acquire.gpu.global.add.u32
; CHECK-NOT: atom.add
; CHECK: atom.acquire.sys.global.exch.b32
; CHECK: st.release.sys.global.b32
; CHECK: fence.sc.sys;
; CHECK-NEXT: atom.acq_rel.sys.shared.max.s32
; CHECK-NOT: __oxide_stub
