; A ptx_asm! site (a function whose body passes its spec to the stub
; `ptx_asm`) becomes, at each of its calls, one inline asm call: outputs
; first, then inputs and immediates, then the input tied to each in-out
; operand; outputs stored to their places, a bool as a byte; a pointer
; input passed as its address; `~{memory}` and side effects unless the
; options say otherwise; always convergent. The site is deleted.
; RUN: %oxide-opt -passes=lower-inline-ptx %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt -passes=lower-inline-ptx,lower-intrinsic-stubs,sroa,instcombine --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

; options "pure,nomem"; operands d = out(u32), a = in(u32), p = out(bool),
; acc = inout(u64), k = const.
@spec_pure = internal constant <{ [86 x i8] }> <{ [86 x i8] c"pure,nomem\00=r,r,=b,+l,n\00add.s32 $0, $3, $3; setp.eq.u32 $1, $3, 0; add.u64 $2, $2, $4;" }>
; default options; operands p = in(*mut u32), v = in(u32).
@spec_store = internal constant <{ [28 x i8] }> <{ [28 x i8] c"\00l,r\00st.u32 [$0], $1;\00\00\00\00\00\00\00" }>

declare void @__oxide_stub_ptx_asm(ptr, i64)

define internal void @site_pure(ptr %d, i32 %a, ptr %p, ptr %acc, i64 %k) {
  call void @__oxide_stub_ptx_asm(ptr @spec_pure, i64 86)
  ret void
}

define internal void @site_store(ptr %p, i32 %v) {
  call void @__oxide_stub_ptx_asm(ptr @spec_store, i64 21)
  ret void
}

define ptx_kernel void @k(ptr %out, i32 %x) {
  %d = alloca i32
  %p = alloca i8
  %acc = alloca i64
  store i64 5, ptr %acc
  call void @site_pure(ptr %d, i32 %x, ptr %p, ptr %acc, i64 7)
  %dv = load i32, ptr %d
  %pv = load i8, ptr %p
  %pw = zext i8 %pv to i32
  %s = add i32 %dv, %pw
  call void @site_store(ptr %out, i32 %s)
  ret void
}
; IR-LABEL: define ptx_kernel void @k(
; IR: %[[OLD:[0-9]+]] = load i64, ptr %acc
; IR: %[[R:[0-9]+]] = call { i32, i1, i64 } asm "// ptx_asm! at (no debug info)\0A\09add.s32 $0, $3, $3; setp.eq.u32 $1, $3, 0; add.u64 $2, $2, $4;", "=r,=b,=l,r,n,2"(i32 %x, i64 7, i64 %[[OLD]]) #[[PURE:[0-9]+]], !oxide.stub.asm
; IR: extractvalue { i32, i1, i64 } %[[R]], 0
; IR: store i32 {{.*}}, ptr %d
; IR: %[[B:[0-9]+]] = extractvalue { i32, i1, i64 } %[[R]], 1
; IR: zext i1 %[[B]] to i8
; IR: store i8 {{.*}}, ptr %p
; IR: store i64 {{.*}}, ptr %acc
; IR: %[[ADDR:[0-9]+]] = ptrtoint ptr %out to i64
; IR: call void asm sideeffect "// ptx_asm! at (no debug info)\0A\09st.u32 [$0], $1;", "l,r,~{memory}"(i64 %[[ADDR]], i32 %s) #[[SIDE:[0-9]+]], !oxide.stub.asm
; IR-NOT: @site_pure
; IR-NOT: @site_store
; IR-NOT: __oxide_stub_ptx_asm(
; IR: attributes #[[PURE]] = { convergent nounwind memory(none) }
; IR: attributes #[[SIDE]] = { convergent nounwind }

; PTX-LABEL: .entry k(
; PTX: // ptx_asm! at (no debug info)
; PTX-NEXT: add.s32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}; setp.eq.u32 %p{{[0-9]+}}, %r{{[0-9]+}}, 0; add.u64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, 7;
; PTX: st.u32 [%rd{{[0-9]+}}], %r{{[0-9]+}};
