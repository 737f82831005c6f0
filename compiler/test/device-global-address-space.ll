; `#[device_global]` statics (section .oxide.global) move to addrspace(1)
; (PTX .global) with their initialiser, external under a PTX-legal name and
; externally initialised (the host reads and writes them between launches, so
; no load may be folded to the initialiser), and are listed for the kernel
; table like constants. An atomic on one stays an atomic on the moved global.
; A static that only the global's initialiser names (a pointer into a table,
; one past its end) is kept with it; a global no kernel uses is kept too, for
; the host may still read and write it.
; RUN: %oxide-opt -passes=assign-address-spaces,select-reachable %s | FileCheck %s

@_ZN4demo7COUNTER17h0123456789abcdefE = internal global [4 x i8] zeroinitializer, section ".oxide.global", align 4
@_ZN4demo5TABLE17h0123456789abcdefE = internal constant [4 x i32] [i32 1, i32 2, i32 3, i32 4], align 4
@_ZN4demo6CURSOR17h0123456789abcdefE = internal global { ptr, ptr } { ptr getelementptr inbounds (i8, ptr @_ZN4demo5TABLE17h0123456789abcdefE, i64 4), ptr getelementptr inbounds (i8, ptr @_ZN4demo5TABLE17h0123456789abcdefE, i64 16) }, section ".oxide.global", align 8
@_ZN4demo6UNUSED17h0123456789abcdefE = internal global [4 x i8] zeroinitializer, section ".oxide.global", align 4

define ptx_kernel void @k(ptr %out) {
  %n = atomicrmw add ptr @_ZN4demo7COUNTER17h0123456789abcdefE, i32 1 monotonic, align 4
  store i32 %n, ptr %out
  %p = load ptr, ptr @_ZN4demo6CURSOR17h0123456789abcdefE
  %v = load i32, ptr %p
  store i32 %v, ptr %out
  ret void
}
; CHECK-DAG: @_ZN4demo7COUNTER17h0123456789abcdefE = addrspace(1) externally_initialized global [4 x i8] zeroinitializer, align 4
; CHECK-DAG: @_ZN4demo5TABLE17h0123456789abcdefE = internal constant [4 x i32] [i32 1, i32 2, i32 3, i32 4]
; CHECK-DAG: @_ZN4demo6CURSOR17h0123456789abcdefE = addrspace(1) externally_initialized global { ptr, ptr } { ptr getelementptr inbounds (i8, ptr @_ZN4demo5TABLE17h0123456789abcdefE, i64 4), ptr getelementptr inbounds (i8, ptr @_ZN4demo5TABLE17h0123456789abcdefE, i64 16) }, align 8
; CHECK-DAG: @_ZN4demo6UNUSED17h0123456789abcdefE = addrspace(1) externally_initialized global [4 x i8] zeroinitializer, align 4
; CHECK: atomicrmw add ptr addrspacecast (ptr addrspace(1) @_ZN4demo7COUNTER17h0123456789abcdefE to ptr), i32 1 monotonic
; CHECK: load ptr, ptr addrspacecast (ptr addrspace(1) @_ZN4demo6CURSOR17h0123456789abcdefE to ptr)
; CHECK: !oxide.constants = !{![[A:[0-9]+]], ![[B:[0-9]+]], ![[C:[0-9]+]]}
; CHECK-DAG: !{ptr addrspace(1) @_ZN4demo7COUNTER17h0123456789abcdefE, !"_ZN4demo7COUNTER17h0123456789abcdefE"}
; CHECK-DAG: !{ptr addrspace(1) @_ZN4demo6CURSOR17h0123456789abcdefE, !"_ZN4demo6CURSOR17h0123456789abcdefE"}
