; A module whose PTX uses setmaxnreg is assembled whole, not part by part:
; relocatable code (`ptxas -c`, what each part of a split module becomes
; before nvlink joins them) ignores setmaxnreg (ptxas's C7504), which would
; leave a warp-specialised kernel's consumer warpgroups at the launch's
; register count, spilling. The same module without setmaxnreg (SPLIT) is
; still assembled in parts.
; RUN: %if ptxas %{ env OXIDE_VERBOSE=1 %oxide-opt --ptx --assemble --arch sm_90a %s 2>&1 | FileCheck %s --check-prefix=WHOLE %}
; RUN: %if ptxas %{ sed -e 's/call void @__oxide_stub_setmaxnreg_[a-z]*(i32 [0-9]*)//' %s > %t.ll %}
; RUN: %if ptxas %{ env OXIDE_VERBOSE=1 %oxide-opt --ptx --assemble --arch sm_90a %t.ll 2>&1 | FileCheck %s --check-prefix=SPLIT %}

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()
declare void @__oxide_stub_setmaxnreg_dec(i32)
declare void @__oxide_stub_setmaxnreg_inc(i32)

define internal void @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  %out = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  %producer = icmp uge i32 %t, 256
  br i1 %producer, label %dec, label %inc
dec:
  call void @__oxide_stub_setmaxnreg_dec(i32 40)
  ret void
inc:
  call void @__oxide_stub_setmaxnreg_inc(i32 232)
  store i32 %t, ptr %out
  ret void
}

define internal void @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  %out = load ptr, ptr %0
  %t = call i32 @__oxide_stub_thread_idx_x()
  store i32 %t, ptr %out
  ret void
}

@launch_a = global ptr @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE
@launch_b = global ptr @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE
define void @host_main() #1 {
  ret void
}
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { uwtable "target-cpu"="x86-64" }

; The verbose lines (stderr, unbuffered) come before the PTX (stdout).
; WHOLE: oxide-link: split into 2 parts
; WHOLE: oxide-link: the module uses setmaxnreg, which ptxas -c ignores: ptxas compiles it whole
; WHOLE-NOT: ptxas -c of
; WHOLE: oxide-link: ptxas:
; WHOLE: setmaxnreg.dec.sync.aligned.u32 40;
; WHOLE: ; ptxas accepted it: a cubin

; SPLIT: oxide-link: split into 2 parts
; SPLIT-NOT: uses setmaxnreg
; SPLIT: oxide-link: ptxas -c of
; SPLIT-NOT: setmaxnreg
; SPLIT: ; ptxas accepted it: a cubin
