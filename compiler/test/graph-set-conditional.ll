; A kernel sets a graph conditional node's condition through the stub
; `graph_set_conditional`, which becomes a call of CUDA's
; `cudaGraphSetConditional(handle, value)`. The driver resolves that
; function when it loads the module (DriverFunctions.def), as it does
; vprintf: reject-unsupported lets the declaration through, the PTX declares
; it `.extern .func` with nvcc's prototype (.b64, .b32), and ptxas accepts
; the module whole (a cubin), without libcudadevrt, in one part and in
; several (each part relocatable, joined by nvlink).
; RUN: %oxide-opt -passes=lower-intrinsic-stubs,reject-unsupported %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX
; RUN: %if ptxas %{ %oxide-opt --ptx --assemble --arch sm_90 %s | FileCheck %s --check-prefix=PTXAS %}
; RUN: %if ptxas %{ env OXIDE_SPLIT=0 %oxide-opt --ptx --assemble --arch sm_90 %s | FileCheck %s --check-prefix=PTXAS %}

target triple = "x86_64-unknown-linux-gnu"

declare void @__oxide_stub_param_layout(i32, i64, i64)
declare i32 @__oxide_stub_thread_idx_x()
declare void @__oxide_stub_graph_set_conditional(i64, i32)

define internal void @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE(ptr %0, ptr %1) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  call void @__oxide_stub_param_layout(i32 1, i64 4, i64 4)
  %h = load i64, ptr %0
  %v = load i32, ptr %1
  %t = call i32 @__oxide_stub_thread_idx_x()
  %first = icmp eq i32 %t, 0
  br i1 %first, label %set, label %done
set:
  call void @__oxide_stub_graph_set_conditional(i64 %h, i32 %v)
  br label %done
done:
  ret void
}

define internal void @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE(ptr %0) #0 {
  call void @__oxide_stub_param_layout(i32 0, i64 8, i64 8)
  %h = load i64, ptr %0
  call void @__oxide_stub_graph_set_conditional(i64 %h, i32 0)
  ret void
}

@launch_a = global ptr @_ZN4demo22__oxide_kernel_entry_a17h0123456789abcdefE
@launch_b = global ptr @_ZN4demo22__oxide_kernel_entry_b17h0123456789abcdefE
define void @host_main() #1 {
  ret void
}
attributes #0 = { noinline "target-cpu"="x86-64" }
attributes #1 = { uwtable "target-cpu"="x86-64" }

; IR-NOT: __oxide_stub_graph_set_conditional
; IR: call void @cudaGraphSetConditional(i64 %h, i32 %v)
; IR-NOT: __oxide_stub_graph_set_conditional
; IR: declare void @cudaGraphSetConditional(i64, i32)

; PTX: .extern .func cudaGraphSetConditional
; PTX-NEXT: (
; PTX-NEXT: .param .b64 cudaGraphSetConditional_param_0,
; PTX-NEXT: .param .b32 cudaGraphSetConditional_param_1
; PTX: call.uni cudaGraphSetConditional, (param0, param1);

; PTXAS: ; ptxas accepted it: a cubin
