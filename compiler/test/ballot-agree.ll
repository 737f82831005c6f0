; `vote_ballot_agree` (warp::ballot_agree) is one bit test, one vote and a
; predicated complement: the lanes whose bit agrees with this lane's. The same
; written with the ballot intrinsic and a select (the radix sort's ranking
; before) gives two bit tests a vote after NVPTX's selection: the ballot's
; predicate from a shift of the digit, the complement's from a mask of it.
; It is a `ConvergentAsm` stub: convergent, touching only inaccessible memory
; (as llvm.nvvm.vote.ballot.sync), so it has no side effect that would pin
; loads and stores around it, and O3 may move a load across it.
; RUN: %oxide-opt -passes=lower-intrinsic-stubs %s | FileCheck %s --check-prefix=IR
; RUN: %oxide-opt -passes=lower-intrinsic-stubs --ptx --arch sm_90 %s | FileCheck %s --check-prefix=PTX

target triple = "nvptx64-nvidia-cuda"

declare i32 @__oxide_stub_vote_ballot_agree(i32, i32)

define ptx_kernel void @peers_of_bit3(i32 %digit, ptr addrspace(1) %out) {
  %bit = and i32 %digit, 8
  %lanes = call i32 @__oxide_stub_vote_ballot_agree(i32 -1, i32 %bit)
  store i32 %lanes, ptr addrspace(1) %out
  ret void
}
; IR: call i32 asm "{ .reg .pred p; setp.ne.u32 p, $2, 0; vote.sync.ballot.b32 $0, p, $1; @!p not.b32 $0, $0; }", "=r,r,r"(i32 -1, i32 %bit) #[[ATTR:[0-9]+]], !oxide.stub.asm
; IR-NOT: __oxide_stub_vote_ballot_agree
; IR: attributes #[[ATTR]] = { convergent nounwind memory(inaccessiblemem: readwrite) }
; PTX-LABEL: .entry peers_of_bit3(
; PTX: and.b32 [[BIT:%r[0-9]+]], %r{{[0-9]+}}, 8;
; PTX-NOT: setp
; PTX: setp.ne.u32 p, [[BIT]], 0; vote.sync.ballot.b32 %r{{[0-9]+}}, p, %r{{[0-9]+}}; @!p not.b32
; PTX-NOT: setp
; PTX: ret;

; RUN: %oxide-opt -passes=lower-intrinsic-stubs,gvn %s | FileCheck %s --check-prefix=GVN
; The second load of %p is the first's value: the vote between them does not
; write memory the kernel can name.
define ptx_kernel void @load_across(i32 %digit, ptr addrspace(1) %p, ptr addrspace(1) %out) {
  %a = load i32, ptr addrspace(1) %p
  %lanes = call i32 @__oxide_stub_vote_ballot_agree(i32 -1, i32 %digit)
  %b = load i32, ptr addrspace(1) %p
  %sum = add i32 %a, %b
  %r = add i32 %sum, %lanes
  store i32 %r, ptr addrspace(1) %out
  ret void
}
; GVN-LABEL: define ptx_kernel void @load_across(
; GVN: load i32
; GVN-NOT: load i32
; GVN: ret void
