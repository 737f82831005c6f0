; The asm names the state space the address is in, as LLVM's own atomics
; would after its address-space inference (which only runs during code
; generation): .shared for shared-memory variables (also reached through a
; generic pointer), .global for addrspace(1), for a kernel's pointer arguments
; and for pointers loaded from its byval parameters (NVPTX's convention);
; generic otherwise, and generic for spaces atom cannot address (local).
; RUN: %oxide-opt -passes=lower-atomics %s | FileCheck %s

@tile = internal addrspace(3) global [64 x i32] undef

define ptx_kernel void @kernel(ptr byval([16 x i8]) align 8 %slice, ptr %arg, ptr addrspace(1) %g, ptr %unknown, i64 %i, i32 %v) {
  %s = getelementptr i32, ptr addrspacecast (ptr addrspace(3) @tile to ptr), i64 %i
  %1 = atomicrmw add ptr %s, i32 %v syncscope("block") acquire
  %data = load ptr, ptr %slice
  %elem = getelementptr i32, ptr %data, i64 %i
  %2 = atomicrmw add ptr %elem, i32 %v syncscope("device") acquire
  %3 = atomicrmw add ptr %arg, i32 %v syncscope("device") acquire
  %4 = atomicrmw add ptr addrspace(1) %g, i32 %v syncscope("device") acquire
  %local = alloca i32, align 4, addrspace(5)
  %5 = atomicrmw add ptr addrspace(5) %local, i32 %v syncscope("device") acquire
  %u = load ptr, ptr %unknown
  %6 = atomicrmw add ptr %u, i32 %v syncscope("device") acquire
  ret void
}
; CHECK-LABEL: define ptx_kernel void @kernel(
; CHECK: %[[S:.*]] = addrspacecast ptr %s to ptr addrspace(3)
; CHECK-NEXT: %[[SI:.*]] = ptrtoint ptr addrspace(3) %[[S]] to i64
; CHECK-NEXT: "atom.acquire.cta.shared.add.u32 {{.*}}(i64 %[[SI]], i32 %v)
; CHECK: addrspacecast ptr %elem to ptr addrspace(1)
; CHECK: "atom.acquire.gpu.global.add.u32
; CHECK: addrspacecast ptr %arg to ptr addrspace(1)
; CHECK: "atom.acquire.gpu.global.add.u32
; CHECK: ptrtoint ptr addrspace(1) %g to i64
; CHECK: "atom.acquire.gpu.global.add.u32
; CHECK: addrspacecast ptr addrspace(5) %local to ptr
; CHECK: "atom.acquire.gpu.add.u32
; CHECK: ptrtoint ptr %u to i64
; CHECK: "atom.acquire.gpu.add.u32
