; A call through a pointer may reach every address-taken function of the
; call's type, and only those: @other_type (address taken, another type) and
; @not_taken (the right type, its address never taken) are not on k's path,
; so its bound is k + small. A call through a pointer of a type no defined
; function has leaves the bound unknown, and so does any indirect call without
; ptxas frames: the host then raises the stack to the fallback
; (KernelStackUnknown = 2^64 - 1).
; RUN: %oxide-opt --stack-bound --ptxas-log=%s %s 2>&1 | FileCheck %s --check-prefix=FRAMES
; RUN: %oxide-opt --stack-bound %s 2>&1 | FileCheck %s --check-prefix=NOPTXAS

; ptxas info    : Function properties for small
;     40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for other_type
;     5000 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for not_taken
;     9000 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for k
;     8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for k_unresolved
;     8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

target triple = "nvptx64-nvidia-cuda"

@vtable = constant [2 x ptr] [ptr @small, ptr @other_type]

define void @small(ptr %x) {
  ret void
}
define i32 @other_type(ptr %x) {
  ret i32 0
}
define void @not_taken(ptr %x) {
  ret void
}
define ptx_kernel void @k(ptr %slot, ptr %x) {
  %f = load ptr, ptr %slot
  call void %f(ptr %x)
  call void @external()
  ret void
}
declare void @external()
define ptx_kernel void @k_unresolved(ptr %slot) {
  %f = load ptr, ptr %slot
  call void %f(i64 1)
  ret void
}

; FRAMES-DAG: stack k = 48
; FRAMES-DAG: stack k_unresolved = 18446744073709551615
; FRAMES-DAG: k_unresolved: unknown (an indirect call with no target in the module)
; NOPTXAS-DAG: stack k = 18446744073709551615
; NOPTXAS-DAG: k: unknown (indirect calls, no ptxas frames)
