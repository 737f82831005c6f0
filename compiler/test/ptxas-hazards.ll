; PtxasHazards.cpp rewrites each PTX instruction of PtxasHazards.def into
; its exact equivalent, wherever the backend put it: a plain line, a
; guarded one (the guard goes on every instruction of the replacement,
; whose scratch register lives in a scope of its own), a statement inside
; an inline-asm line; destination and source may be one register. Other
; instructions, 64-bit negation, `abs.ftz.f32` and `abs.f64` included,
; are left as they are.
; A load narrower than a whole scalar `.param .b32`/`.b64` slot (an i8 or
; i16 argument or result, the low byte of a u64) reads the whole slot and
; converts from its low bits; loads from aggregates and a kernel's own
; parameters stay.
; RUN: rm -rf %t && split-file %s %t
; RUN: cat %t/in.ptx %t/more.ptx > %t/all.ptx
; RUN: %oxide-opt --rewrite-ptxas-hazards %t/all.ptx | FileCheck %s
; CHECK-LABEL: .visible .func f(
; CHECK:      { .reg .b32 %oxide_t; cvt.u32.u16 %oxide_t, %rs1; not.b32 %oxide_t, %oxide_t; add.s32 %oxide_t, %oxide_t, 1; cvt.u16.u32 %rs2, %oxide_t; }
; CHECK-NEXT: { .reg .b16 %oxide_t; shr.s16 %oxide_t, %rs2, 15; xor.b16 %rs3, %rs2, %oxide_t; sub.u16 %rs3, %rs3, %oxide_t; } // keeps its comment
; CHECK-NEXT: { .reg .b32 %oxide_t; @%p1 shr.s32 %oxide_t, %r1, 31; @%p1 xor.b32 %r2, %r1, %oxide_t; @%p1 sub.s32 %r2, %r2, %oxide_t; }
; CHECK-NEXT: { .reg .b64 %oxide_t; @!%p2 shr.s64 %oxide_t, %rd1, 63; @!%p2 xor.b64 %rd1, %rd1, %oxide_t; @!%p2 sub.s64 %rd1, %rd1, %oxide_t; }
; CHECK-NEXT: not.b32 %r3, %r2; add.s32 %r3, %r3, 1;
; CHECK-NEXT: @!%p1 not.b32 %r4, %r4; @!%p1 add.s32 %r4, %r4, 1;
; CHECK-NEXT: neg.s64 %rd2, %rd1;
; CHECK-NEXT: { mov.b16 %rs4, %rs3; { .reg .b32 %oxide_t; cvt.u32.u16 %oxide_t, %rs4; not.b32 %oxide_t, %oxide_t; add.s32 %oxide_t, %oxide_t, 1; cvt.u16.u32 %rs5, %oxide_t; } }
; CHECK-NEXT: // abs.s64 in a comment stays
; CHECK-NEXT: and.b32 %r5, %r4, 2147483647;
; CHECK-NEXT: @%p1 and.b32 %r6, %r6, 2147483647;
; CHECK-NEXT: abs.ftz.f32 %r7, %r4;
; CHECK-NEXT: abs.f64 %rd3, %rd2;
; CHECK-NEXT: ret;
; CHECK-LABEL: .func (.param .b32 func_retval0) g(
; CHECK: { .reg .b32 %oxide_t; ld.param.b32 %oxide_t, [g_param_0]; cvt.s16.s8 %rs1, %oxide_t; }
; CHECK-NEXT: ld.param.u8 %rs2, [g_param_1+3];
; CHECK-NEXT: { .reg .b64 %oxide_t; ld.param.b64 %oxide_t, [g_param_2]; cvt.u32.u8 %r3, %oxide_t; }
; CHECK-NEXT: { .reg .b32 %oxide_t; ld.param.b32 %oxide_t, [g_param_0]; cvt.u16.u32 %rs4, %oxide_t; }
; CHECK-NEXT: { .reg .b32 %oxide_t; ld.param.b32 %oxide_t, [g_param_0]; cvt.s32.s16 %r4, %oxide_t; }
; CHECK: { .reg .b32 %oxide_t; ld.param.b32 %oxide_t, [retval0]; cvt.u32.u8 %r2, %oxide_t; }
; CHECK: { .reg .b32 %oxide_t; @%p1 ld.param.b32 %oxide_t, [g_param_0]; @%p1 cvt.u64.u8 %rd1, %oxide_t; }
; CHECK-LABEL: .visible .entry k(
; CHECK: ld.param.u8 %rs1, [k_param_0];

;--- in.ptx
.visible .func f(
)
{
	neg.s16 	%rs2, %rs1;
	abs.s16 	%rs3, %rs2; // keeps its comment
	@%p1 abs.s32 	%r2, %r1;
	@!%p2 abs.s64 	%rd1, %rd1;
	neg.s32 	%r3, %r2;
	@!%p1 neg.s32 	%r4, %r4;
	neg.s64 	%rd2, %rd1;
	{ mov.b16 %rs4, %rs3; neg.s16 %rs5, %rs4; }
	// abs.s64 in a comment stays
	abs.f32 	%r5, %r4;
	@%p1 abs.f32 	%r6, %r6;
	abs.ftz.f32 	%r7, %r4;
	abs.f64 	%rd3, %rd2;
	ret;
}
;--- more.ptx
.func (.param .b32 func_retval0) g(
	.param .b32 g_param_0,
	.param .align 8 .b8 g_param_1[16],
	.param .b64 g_param_2
)
{
	ld.param.s8 	%rs1, [g_param_0];
	ld.param.u8 	%rs2, [g_param_1+3];
	ld.param.b8 	%r3, [g_param_2];
	ld.param.u16 	%rs4, [g_param_0];
	ld.param.s16 	%r4, [g_param_0];
	{ // callseq 0, 0
	.param .b32 	retval0;
	call.uni (retval0), f, ();
	ld.param.u8 	%r2, [retval0];
	} // callseq 0
	@%p1 ld.param.b8 	%rd1, [g_param_0];
	ret;
}
.visible .entry k(
	.param .u8 k_param_0
)
{
	ld.param.u8 	%rs1, [k_param_0];
	ret;
}
