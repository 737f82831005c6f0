; A module of several kernels is compiled in parts and its parts assembled
; by ptxas as relocatable code, except when a kernel uses setmaxnreg: ptxas
; drops setmaxnreg in relocatable code (C7504, "ignored to maintain
; compatibility across compilation units") and the kernel would run on its
; entry's register budget. Such a module is compiled as one (Compile.cpp,
; splitPays); one without setmaxnreg is still split (FileCheck's SPLIT).
; The system linker here is `true`, which writes no program, so the link
; fails after the device compile, which is all this test needs.
; RUN: rm -rf %t && mkdir -p %t
; RUN: cp %s %t/demo-0123456789abcdef.demo.aaaa-cgu.0.rcgu.no-opt.bc
; RUN: not env OXIDE_SYSTEM_LINKER=true OXIDE_ARCH=sm_90a OXIDE_VERBOSE=1 OXIDE_CACHE_DIR=%t/cache \
; RUN:   %oxide-link %t/demo-0123456789abcdef.demo.aaaa-cgu.0.rcgu.o -o %t/demo 2>&1 | FileCheck %s --check-prefix=WHOLE
; WHOLE: compiled as one module: a kernel uses setmaxnreg
; WHOLE-NOT: join PTX
; RUN: sed -e 's/call void @__oxide_stub_setmaxnreg_dec(i32 40)//' %s > %t/plain.ll
; RUN: cp %t/plain.ll %t/plain-0123456789abcdef.plain.aaaa-cgu.0.rcgu.no-opt.bc
; RUN: not env OXIDE_SYSTEM_LINKER=true OXIDE_ARCH=sm_90a OXIDE_VERBOSE=1 OXIDE_CACHE_DIR=%t/cache \
; RUN:   %oxide-link %t/plain-0123456789abcdef.plain.aaaa-cgu.0.rcgu.o -o %t/plain 2>&1 | FileCheck %s --check-prefix=SPLIT
; SPLIT-NOT: compiled as one module
; SPLIT: join PTX

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()
declare void @__oxide_stub_setmaxnreg_dec(i32)

define internal void @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  %v = load i32, ptr %p
  %w = add i32 %v, 1
  store i32 %w, ptr %p
  ret void
}

define internal void @_ZN4demo26__oxide_kernel_entry_spare17h0123456789abcdefE(ptr %0) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_setmaxnreg_dec(i32 40)
  %slice = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  store i32 0, ptr %p
  ret void
}
; The host takes the wrappers' addresses at the launch site, which keeps them.
@launch_site = global [2 x ptr] [ptr @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE, ptr @_ZN4demo26__oxide_kernel_entry_spare17h0123456789abcdefE]
