; core's panic functions get a device body: read the Location the caller
; passed (at run time), hand file/line/col, message and integer arguments to
; the shared recorder (host-readable record), print them with the thread and
; block, then trap.
; RUN: %oxide-opt -passes=lower-panics %s | FileCheck %s

@file = private constant [12 x i8] c"src/main.rs\00"
@loc = private constant <{ ptr, [16 x i8] }> <{ ptr @file, [16 x i8] c"\0B\00\00\00\00\00\00\00\0F\00\00\00\0B\00\00\00" }>

declare void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64, i64, ptr)
declare void @_RNvNtNtCsgEmfK2I1SDS_4core9panicking11panic_const24panic_const_add_overflow(ptr)

define void @user(i64 %i) {
  call void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64 %i, i64 4, ptr @loc)
  call void @_RNvNtNtCsgEmfK2I1SDS_4core9panicking11panic_const24panic_const_add_overflow(ptr @loc)
  ret void
}
; CHECK-DAG: @__oxide_panic_record = addrspace(1) externally_initialized global ptr null
; CHECK-DAG: @[[MSG:oxide.panic.msg[.0-9]*]] = {{.*}} c"index out of bounds: the len is {0} but the index is {1}\00"
; CHECK-DAG: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0Aindex out of bounds: the len is %llu but the index is %llu\0A\00"
; CHECK-DAG: c"GPU thread (%u, %u, %u) of block (%u, %u, %u) panicked at %s:%u:%u:\0Aattempt to add with overflow\0A\00"

; The len (second parameter) is printed first, as rustc's message says.
; CHECK-LABEL: define internal void @_RNvNtCsgEmfK2I1SDS_4core9panicking18panic_bounds_check(i64 %0, i64 %1, ptr %2)
; CHECK: %[[TX:[0-9]+]] = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
; CHECK: %file = load ptr, ptr %2
; CHECK: %file_len = load i64, ptr
; CHECK: %line = load i32, ptr
; CHECK: %col = load i32, ptr
; The record's message is a template over its values, the two integers
; (kind 4, u64, each: 0x0404), in the order of the text.
; CHECK: %[[LEN:[0-9]+]] = zext i64 %1 to i128
; CHECK: store i128 %[[LEN]], ptr %[[SLOT0:[0-9]+]]
; CHECK: %[[INDEX:[0-9]+]] = zext i64 %0 to i128
; CHECK: call void @oxide.record_panic(ptr %file, i64 %file_len, i32 %line, i32 %col, ptr @[[MSG]], i64 56, ptr %values, i64 1028, i32 2, i32 %[[TX]],
; CHECK: call i32 @vprintf(
; CHECK: call void @llvm.trap()
; CHECK-NEXT: unreachable

; The recorder: only when the host installed a record, only the first thread
; (device-side claim), the fields at PanicRecord.def's offsets (the value
; count at 12, the kinds at 40, two words a value from 48), system-scope
; fences around the completion flag.
; CHECK-LABEL: define internal void @oxide.record_panic(
; CHECK: load ptr, ptr addrspace(1) @__oxide_panic_record
; CHECK: cmpxchg ptr addrspace(1) @oxide.panic_claimed, i32 0, i32 1 monotonic monotonic
; CHECK: %[[NV:[0-9]+]] = getelementptr inbounds i8, ptr %record, i64 12
; CHECK-NEXT: store i32 %8, ptr %[[NV]]
; CHECK: %[[KINDS:[0-9]+]] = getelementptr inbounds i8, ptr %record, i64 40
; CHECK-NEXT: store i64 %7, ptr %[[KINDS]]
; CHECK: %[[WORDS:[0-9]+]] = shl i64 %{{[0-9]+}}, 1
; CHECK: %[[VALUES:[0-9]+]] = getelementptr inbounds i8, ptr %record, i64 48
; CHECK: copy.element:
; CHECK: load i64, ptr
; CHECK: fence seq_cst
; CHECK: store volatile i32 2, ptr
; CHECK-NEXT: fence seq_cst
