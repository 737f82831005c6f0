; A module with several kernels is compiled in parts (SplitByKernel.cpp) and
; its PTX joined again (joinPtxParts): what two kernels share (the helper
; `shared`, the table `TABLE` both it and kernel b read) is defined once, in the common part, first,
; and no part re-declares it; what one kernel alone reaches (`only_a`, its
; string `ONLY_A`) stays in that kernel's part, just before its entry;
; ptxas accepts the joined module, and each part alone as relocatable code.
; OXIDE_SPLIT=0 compiles the module whole: the same definitions.
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefixes=CHECK,SPLIT
; RUN: env OXIDE_SPLIT=0 %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefixes=CHECK,WHOLE
; Device debug info and OXIDE_LLVM_ARGS keep the module whole.
; RUN: env OXIDE_DEVICE_DEBUG=lines %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=WHOLE
; RUN: env OXIDE_LLVM_ARGS=-verify-each %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=WHOLE
; RUN: %if ptxas %{ %oxide-opt --ptx --assemble --arch sm_90 %s | FileCheck %s --check-prefix=PTXAS %}

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()

@TABLE = internal constant [4 x i32] [i32 3, i32 5, i32 7, i32 11]
@ONLY_A = internal constant [4 x i32] [i32 1, i32 2, i32 4, i32 8]

define internal i32 @shared(i32 %x) #0 {
  %i = and i32 %x, 3
  %p = getelementptr [4 x i32], ptr @TABLE, i32 0, i32 %i
  %v = load i32, ptr %p
  %r = mul i32 %v, %x
  ret i32 %r
}

define internal i32 @only_a(i32 %x) #0 {
  %i = and i32 %x, 3
  %p = getelementptr [4 x i32], ptr @ONLY_A, i32 0, i32 %i
  %v = load i32, ptr %p
  %r = add i32 %v, %x
  ret i32 %r
}

define internal void @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %s = call i32 @shared(i32 %t)
  %o = call i32 @only_a(i32 %s)
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %o, ptr %p
  ret void
}

define internal void @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %s = call i32 @shared(i32 %t)
  %k = and i32 %t, 1
  %q = getelementptr [4 x i32], ptr @TABLE, i32 0, i32 %k
  %v = load i32, ptr %q
  %sum = add i32 %s, %v
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 %sum, ptr %p
  ret void
}

@launch_a = global ptr @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE
@launch_b = global ptr @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE
define void @host_main() #1 {
  ret void
}
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { uwtable "target-cpu"="x86-64" }

; SPLIT: ; compiled in 3 parts, 3 buckets
; WHOLE-NOT: ; compiled in
; CHECK: .target sm_90
; CHECK-NOT: .extern
; The common part: the table kernel b reads (external now, so that b's part
; could declare it) and the helper both kernels call.
; SPLIT: .visible .global .align 4 .b8 TABLE[16]
; SPLIT-NOT: .extern
; SPLIT: .visible .func (.param .b32 func_retval0) shared(
; SPLIT-NOT: .extern
; Kernel a's part: what only it reaches, internal as before.
; SPLIT: .global .align 4 .b8 ONLY_A[16]
; SPLIT-NOT: .extern
; SPLIT: .func (.param .b32 func_retval0) only_a(
; SPLIT: .visible .entry _ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(
; SPLIT: call.uni (retval0), shared,
; SPLIT: call.uni (retval0), only_a,
; Kernel b's part: its declarations of TABLE and shared are gone.
; SPLIT-NOT: .extern
; SPLIT: .visible .entry _ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(
; SPLIT: call.uni (retval0), shared,
; SPLIT: mov.b64 {{.*}}, TABLE;
; SPLIT-NOT: .extern
; SPLIT-NOT: .func {{.*}}shared(
; SPLIT-NOT: TABLE[16]

; WHOLE: .global .align 4 .b8 TABLE[16]
; WHOLE: .global .align 4 .b8 ONLY_A[16]
; WHOLE: .func (.param .b32 func_retval0) shared(
; WHOLE: .func (.param .b32 func_retval0) only_a(
; WHOLE: .visible .entry _ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(
; WHOLE: .visible .entry _ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(

; PTXAS: ; compiled in 3 parts, 3 buckets
; PTXAS: ; ptxas accepted it: a cubin
