; The GPU target is a name of Targets.def, as LLVM models targets: the
; device tools refuse any other (LLVM would only warn about a CPU it does not
; know, and ptxas then reject the PTX) with the list of the known ones, and
; a known one brings its PTX ISA version. sm_100f, a family target, is a
; target of its own (it once parsed to "no architecture").
; RUN: not %oxide-opt --arch sm_999 -passes=lower-intrinsic-stubs %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
; RUN: not %oxide-opt --ptx --arch sm_90f %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN-F
; UNKNOWN: oxide-opt: unknown GPU architecture `sm_999`; the known ones are sm_75, sm_80, {{.*}}, sm_90, sm_90a, sm_100, sm_100a, sm_100f, {{.*}}, sm_121f
; UNKNOWN-F: unknown GPU architecture `sm_90f`
;
; oxide-link (rustc's linker, reading OXIDE_ARCH) refuses it before any work.
; RUN: rm -rf %t && mkdir -p %t
; RUN: cp %s %t/demo-0123456789abcdef.demo.aaaa-cgu.0.rcgu.no-opt.bc
; RUN: not env OXIDE_SYSTEM_LINKER=true OXIDE_ARCH=sm_999 \
; RUN:   %oxide-link %t/demo-0123456789abcdef.demo.aaaa-cgu.0.rcgu.o -o %t/demo 2>&1 | FileCheck %s --check-prefix=LINK
; LINK: error: oxide-link: unknown GPU architecture `sm_999`; the known ones are sm_75,
; LINK-NOT: warning
;
; The PTX ISA of the table: 8.1 from sm_90 on (elect.sync, the 32764-byte
; parameter space), 8.8 for sm_100f.
; RUN: %oxide-opt --ptx --arch sm_80 %s | FileCheck %s --check-prefix=SM80
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=SM90
; RUN: %oxide-opt --ptx --arch sm_100f %s | FileCheck %s --check-prefix=SM100F
; SM80: .version 7.0
; SM80: .target sm_80
; SM90: .version 8.1
; SM90: .target sm_90
; SM100F: .version 8.8
; SM100F: .target sm_100f

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
