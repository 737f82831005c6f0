; The stack bound of an entry with direct calls only is the heaviest path of
; ptxas's frames from it (here k -> b, not the longer chain k -> a -> c);
; without ptxas frames it is 0, as the driver sizes such a stack itself.
; RUN: %oxide-opt --stack-bound --ptxas-log=%s %s 2>&1 | FileCheck %s --check-prefix=FRAMES
; RUN: %oxide-opt --stack-bound %s 2>&1 | FileCheck %s --check-prefix=NOPTXAS

; ptxas -v's lines, as the parser reads them:
; ptxas info    : Function properties for c
;     50 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for a
;     100 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for b
;     300 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for k
;     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
; ptxas info    : Function properties for k2
;     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

target triple = "nvptx64-nvidia-cuda"

declare void @vprintf(ptr, ptr)

define void @c() {
  ret void
}
define void @a() {
  call void @c()
  ret void
}
define void @b() {
  call void @vprintf(ptr null, ptr null)
  ret void
}
define ptx_kernel void @k() {
  call void @a()
  call void @b()
  ret void
}
define ptx_kernel void @k2() {
  call void @a()
  ret void
}

; FRAMES-DAG: stack k = 316
; FRAMES-DAG: stack k2 = 150
; NOPTXAS-DAG: stack k = 0
; NOPTXAS-DAG: stack k2 = 0
; FRAMES-NOT: warning
; NOPTXAS-NOT: warning
