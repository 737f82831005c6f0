; The last check on the PTX (PtxasHazards.cpp): an instruction of
; PtxasHazards.def anywhere, predicated or inside an inline-asm block,
; refuses the build and names the function, unless its result is read only
; through an `and` that clears the sign bit (the backend's 8-bit rotate
; negates the shift amount, then masks it to 3 bits). The wrap-safe forms
; KeepNegationWrap writes, and 32-bit negation, pass.
; RUN: split-file %s %t
; RUN: not %oxide-opt --check-ptx %t/neg16.ptx 2>&1 | FileCheck %s --check-prefix=NEG
; RUN: not %oxide-opt --check-ptx %t/abs64.ptx 2>&1 | FileCheck %s --check-prefix=ABS
; RUN: not %oxide-opt --check-ptx %t/wide-mask.ptx 2>&1 | FileCheck %s --check-prefix=WIDE
; RUN: %oxide-opt --check-ptx %t/clean.ptx | FileCheck %s --check-prefix=CLEAN
; NEG: the NVPTX backend emitted `neg.s16` in `_Z5bad`, which ptxas miscompiles (ptxas does not re-extend
; ABS: the NVPTX backend emitted `abs.s64` in `kernel`, which ptxas miscompiles (ptxas assumes the result is not negative
; WIDE: the NVPTX backend emitted `neg.s16` in `masked_wide`
; CLEAN: no ptxas hazards

;--- neg16.ptx
.visible .func  (.param .b64 func_retval0) _Z5bad(
	.param .b64 _Z5bad_param_0
)
{
	.reg .b16 	%rs<3>;
	ld.param.b16 	%rs1, [_Z5bad_param_0];
	@%p1 neg.s16 	%rs2, %rs1;
	cvt.s64.s16 	%rd1, %rs2;
	ret;
}
;--- abs64.ptx
.visible .entry kernel(
	.param .u64 kernel_param_0
)
{
	{ .reg .b64 %t; abs.s64 %t, %rd1; mov.b64 %rd2, %t; }
	ret;
}
;--- wide-mask.ptx
.visible .func masked_wide(
)
{
	neg.s16 	%rs2, %rs1;
	and.b16 	%rs3, %rs2, 32768;
	ret;
}
;--- clean.ptx
.visible .entry ok(
)
{
	.reg .b16 	%rs<3>;
	neg.s32 	%r2, %r1;
	neg.s64 	%rd2, %rd1;
	neg.s16 	%rs5, %rs4;
	and.b16 	%rs6, %rs5, 7;
	shr.u16 	%rs7, %rs4, %rs6;
	{ .reg .b16 %oxide_sign; shr.s16 %oxide_sign, %rs1, 15; xor.b16 %rs2, %rs1, %oxide_sign; sub.u16 %rs2, %rs2, %oxide_sign; }
	ret;
}
