; oxide-link takes LLVM's options for the device pipeline from
; OXIDE_LLVM_ARGS (rustc owns its command line). With OXIDE_DUMP_DIR, as
; `cargo oxide pipeline` sets it, the IR -print-after prints goes to one
; file per pass under passes/, and -time-passes to time-passes.txt.
; The system linker here is `true`, which writes no program, so the link
; fails after the device compile, which is all this test needs.
; RUN: rm -rf %t && mkdir -p %t
; RUN: cp %s %t/demo-0123456789abcdef.demo.aaaa-cgu.0.rcgu.no-opt.bc
; RUN: not env OXIDE_SYSTEM_LINKER=true OXIDE_ARCH=sm_90 OXIDE_DUMP_DIR=%t/dump \
; RUN:   OXIDE_LLVM_ARGS="-print-after=lower-panics,keep-nan-payloads -time-passes -verify-each" \
; RUN:   %oxide-link %t/demo-0123456789abcdef.demo.aaaa-cgu.0.rcgu.o -o %t/demo
; RUN: ls %t/dump/passes | FileCheck %s --check-prefix=FILES
; FILES-DAG: LowerPanicsPass-after.ll
; FILES-DAG: KeepNaNPayloadsPass-after.ll
; RUN: cat %t/dump/passes/*KeepNaNPayloadsPass-after.ll | FileCheck %s --check-prefix=IR
; IR: define ptx_kernel void @_ZN4demo25__oxide_kernel_entry_bump
; RUN: FileCheck %s --check-prefix=TIME --input-file=%t/dump/time-passes.txt
; TIME: Pass execution timing report
; TIME-DAG: oxide::BuildKernelEntriesPass
; TIME-DAG: oxide::KeepNaNPayloadsPass

; An option LLVM does not know stops the link and says where it came from.
; RUN: not env OXIDE_SYSTEM_LINKER=true OXIDE_LLVM_ARGS=-no-such-option \
; RUN:   %oxide-link %t/demo-0123456789abcdef.demo.aaaa-cgu.0.rcgu.o -o %t/demo 2>&1 | FileCheck %s --check-prefix=BAD
; BAD: OXIDE_LLVM_ARGS

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()

define internal void @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE(ptr %0, ptr %1) {
  call void @__oxide_stub_param_layout(i32 0, i64 16, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 4, i64 4)
  %slice = load ptr, ptr %0
  %add = load i32, ptr %1
  %t = call i32 @__oxide_stub_thread_idx_x()
  %i = zext i32 %t to i64
  %p = getelementptr i32, ptr %slice, i64 %i
  %v = load i32, ptr %p
  %w = add i32 %v, %add
  store i32 %w, ptr %p
  ret void
}
; The host takes the wrapper's address at the launch site, which keeps it.
@launch_site = global ptr @_ZN4demo25__oxide_kernel_entry_bump17h0123456789abcdefE
