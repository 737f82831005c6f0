; Before a module is cut into parts (SplitByKernel.cpp, nameForSplit) its
; symbols get the names every part will print: an unnamed constant is named
; after its contents (`__oxide_anon_` and a hash), not numbered per module as
; NVPTX would (`__unnamed_1` in one part and again in the next), so an edit
; elsewhere renames nothing; a private name with a character PTX does not
; allow gets NVPTX's replacement (`.` → `_$_`). The constant only kernel a
; reads stays in a's part, internal; the one both read is in the common part,
; external; the joined PTX defines each once.
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s
; RUN: %if ptxas %{ %oxide-opt --ptx --assemble --arch sm_90 %s | FileCheck %s --check-prefix=PTXAS %}

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()

@0 = private unnamed_addr constant [4 x i32] [i32 1, i32 2, i32 4, i32 8]
@1 = private unnamed_addr constant [4 x i32] [i32 3, i32 5, i32 7, i32 11]
@alloc.both = private unnamed_addr constant [2 x i32] [i32 13, i32 17]

define internal void @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = and i32 %t, 3
  %p0 = getelementptr [4 x i32], ptr @0, i32 0, i32 %i
  %v0 = load volatile i32, ptr %p0
  %p1 = getelementptr [4 x i32], ptr @1, i32 0, i32 %i
  %v1 = load volatile i32, ptr %p1
  %j = and i32 %t, 1
  %p2 = getelementptr [2 x i32], ptr @alloc.both, i32 0, i32 %j
  %v2 = load volatile i32, ptr %p2
  %s = add i32 %v0, %v1
  %r = add i32 %s, %v2
  %o = zext i32 %t to i64
  %q = getelementptr i32, ptr %slice, i64 %o
  store i32 %r, ptr %q
  ret void
}

define internal void @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = and i32 %t, 3
  %p1 = getelementptr [4 x i32], ptr @1, i32 0, i32 %i
  %v1 = load volatile i32, ptr %p1
  %j = and i32 %t, 1
  %p2 = getelementptr [2 x i32], ptr @alloc.both, i32 0, i32 %j
  %v2 = load volatile i32, ptr %p2
  %r = add i32 %v1, %v2
  %o = zext i32 %t to i64
  %q = getelementptr i32, ptr %slice, i64 %o
  store i32 %r, ptr %q
  ret void
}

@launch_a = global ptr @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE
@launch_b = global ptr @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE
define void @host_main() #1 {
  ret void
}
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { uwtable "target-cpu"="x86-64" }

; CHECK: ; compiled in 3 parts, 3 buckets
; CHECK-NOT: __unnamed_
; CHECK-NOT: .extern
; The common part: what both kernels read.
; CHECK-DAG: .visible .global .align 4 .b8 __oxide_anon_[[BOTH:[0-9a-f]+]][16] = {3, 0, 0, 0, 5,
; CHECK-DAG: .visible .global .align 4 .b8 alloc_$_both[8] = {13, 0, 0, 0, 17
; Kernel a's part: its own constant, internal.
; CHECK: {{^}}.global .align 4 .b8 __oxide_anon_[[ONLY:[0-9a-f]+]][16] = {1, 0, 0, 0, 2,
; CHECK: .visible .entry _ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(
; CHECK-DAG: __oxide_anon_[[ONLY]];
; CHECK-DAG: __oxide_anon_[[BOTH]];
; CHECK: .visible .entry _ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(
; CHECK-NOT: __oxide_anon_[[ONLY]]
; CHECK: __oxide_anon_[[BOTH]];
; CHECK-NOT: .extern
; CHECK-NOT: __unnamed_

; PTXAS: ; ptxas accepted it: a cubin
