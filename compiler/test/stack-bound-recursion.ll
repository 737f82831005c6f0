; An entry that reaches a cycle, here r1 -> r2 -> r1 with the way back
; through a pointer, has no stack bound: the link warns, naming the kernel and
; the cycle, and records KernelStackUnknown (2^64 - 1) so that the host raises
; the stack to the fallback. An entry of the same module that does not reach
; the cycle keeps its bound.
; RUN: %oxide-opt --stack-bound --ptxas-log=%s %s 2>&1 | FileCheck %s

; ptxas info    : Function properties for r1
;     64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for r2
;     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for k
;     8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for flat
;     24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

target triple = "nvptx64-nvidia-cuda"

@callback = global ptr @r1

define void @r1(i32 %n) {
  call void @r2(i32 %n)
  ret void
}
define void @r2(i32 %n) {
  %f = load ptr, ptr @callback
  call void %f(i32 %n)
  ret void
}
define ptx_kernel void @k() {
  call void @r1(i32 3)
  ret void
}
define ptx_kernel void @flat() {
  ret void
}

; CHECK: warning: kernel `k` may recurse, so its stack has no bound: r1 -> r2 -> r1
; CHECK-NEXT: = note: its launches raise the device stack to 16384 bytes per thread; set OXIDE_DEVICE_STACK=BYTES at run time for another size
; CHECK-NOT: warning: kernel `flat`
; CHECK-DAG: stack k = 18446744073709551615
; CHECK-DAG: stack flat = 24
