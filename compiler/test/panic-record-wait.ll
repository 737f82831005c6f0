; The first panicking thread claims the host record and fills it; any other
; panicking thread waits (at most 4096 polls of the record's state) until the
; record is complete before it prints and traps, since its trap ends the
; whole kernel and would cut the writer short.
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\0F\00\00\00\0B\00\00\00" }>

declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64, i64, ptr)

define void @user(i64 %i) {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64 %i, i64 4, ptr @loc)
  ret void
}

; CHECK-LABEL: define internal void @oxide.record_panic(
; CHECK: %record = load ptr, ptr addrspace(1) @__oxide_panic_record
; CHECK: cmpxchg ptr addrspace(1) @oxide.panic_claimed, i32 0, i32 1 monotonic monotonic
; CHECK: br i1 %{{[0-9]+}}, label %write, label %wait
; CHECK: wait:
; CHECK-NEXT: %polls = phi i32 [ 0, %claim ], [ %[[NEXT:[0-9]+]], %wait ]
; CHECK-NEXT: %state = load volatile i32, ptr %record
; CHECK-NEXT: %[[NEXT]] = add i32 %polls, 1
; CHECK-NEXT: %[[DONE:[0-9]+]] = icmp eq i32 %state, 2
; CHECK-NEXT: %[[OUT:[0-9]+]] = icmp uge i32 %[[NEXT]], 4096
; CHECK-NEXT: %[[STOP:[0-9]+]] = or i1 %[[DONE]], %[[OUT]]
; CHECK-NEXT: br i1 %[[STOP]], label %done, label %wait
