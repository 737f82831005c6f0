; The parts of a split module are assembled by `ptxas -c` without -v, and
; the frames the stack bound sums are read from each cubin's records
; (cubinFrames): the bound must be the one ptxas -v's report gives when the
; module is assembled whole. Kernel a calls `spill`, whose local array is
; indexed by the thread, so it keeps a stack frame; kernel b has none.
; RUN: %if ptxas %{ env OXIDE_VERBOSE=1 %oxide-opt --ptx --assemble --arch sm_90 %s 2>&1 | FileCheck %s --check-prefixes=CHECK,SPLIT %}
; RUN: %if ptxas %{ env OXIDE_VERBOSE=1 OXIDE_SPLIT=0 %oxide-opt --ptx --assemble --arch sm_90 %s 2>&1 | FileCheck %s --check-prefixes=CHECK,WHOLE %}

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()

define internal i32 @spill(i32 %t) #0 {
  %buf = alloca [32 x i32], align 4
  br label %fill
fill:
  %i = phi i32 [ 0, %0 ], [ %next, %fill ]
  %slot = getelementptr [32 x i32], ptr %buf, i32 0, i32 %i
  %v = mul i32 %i, %t
  store volatile i32 %v, ptr %slot
  %next = add i32 %i, 1
  %done = icmp eq i32 %next, 32
  br i1 %done, label %read, label %fill
read:
  %k = and i32 %t, 31
  %p = getelementptr [32 x i32], ptr %buf, i32 0, i32 %k
  %r = load volatile i32, ptr %p
  ret i32 %r
}

define internal void @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %s = call i32 @spill(i32 %t)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %s, ptr %p
  ret void
}

define internal void @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %t, ptr %p
  ret void
}

@launch_a = global ptr @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE
@launch_b = global ptr @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE

define void @host_main() #1 {
  ret void
}

attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { uwtable "target-cpu"="x86-64" }

; SPLIT: oxide-link: ptxas -c of 2 buckets
; WHOLE-NOT: ptxas -c of
; WHOLE: oxide-link: ptxas:
; CHECK-DAG: oxide-link: stack bound of _ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE: 128 bytes
; CHECK-DAG: oxide-link: stack bound of _ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE: 0 bytes
; CHECK: ; ptxas accepted it: a cubin
