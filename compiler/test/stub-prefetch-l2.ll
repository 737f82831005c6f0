; `cache::prefetch_l2`: the stub becomes `prefetch.L2` on its generic
; address, a side-effecting asm call that O3 neither deletes (its result is
; unused) nor hoists out of the branch that guards it; every target has it.
; RUN: %oxide-opt --arch sm_80 -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt --ptx --arch sm_80 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare void @__oxide_stub_prefetch_l2(i64)

define ptx_kernel void @ahead(ptr %data, i64 %len, i64 %i) {
  %in = icmp ult i64 %i, %len
  br i1 %in, label %ask, label %done
ask:
  %p = getelementptr i32, ptr %data, i64 %i
  %a = ptrtoint ptr %p to i64
  call void @__oxide_stub_prefetch_l2(i64 %a)
  br label %done
done:
  ret void
}
; IR-LABEL: define ptx_kernel void @ahead(
; IR: call void asm sideeffect "prefetch.L2 [$0];", "l"(i64 %a)
; IR-NOT: __oxide_stub_prefetch_l2

; PTX-LABEL: .entry ahead(
; PTX: setp.
; PTX: @{{%p[0-9]+}} bra
; PTX: prefetch.L2 [%rd{{[0-9]+}}];
; PTX: ret;
