//! The scheduler and the faults: barriers reached from different
//! instructions, spin-waits inside a block and across blocks, warp groups,
//! and every way a launch can fail without hanging or crashing.

mod common;

use std::time::Duration;

use common::*;
use ptx_vm::{launch, Fault, LaunchOptions, Module};

fn module(params: &str, body: &str) -> Module {
    Module::parse(&kernel_ptx(params, body)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_barrier_reached_from_two_instructions_synchronises_the_block() {
    // Odd and even threads write their slot on different paths, each with
    // its own barrier.sync (what JumpThreading can make of one barrier),
    // then read a neighbour's slot.
    let m = module(
        ".param .u64 out",
        ".shared .align 4 .b32 slot[256];\n\
         ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; mov.u32 %r9, slot; shl.b32 %r2, %r1, 2; add.u32 %r3, %r9, %r2;\n\
         and.b32 %r4, %r1, 1; setp.eq.u32 %p1, %r4, 1; @%p1 bra ODD;\n\
         mul.lo.u32 %r5, %r1, 3; st.shared.u32 [%r3], %r5; barrier.sync 0; add.u32 %r6, %r1, 1; bra.uni JOIN;\n\
         ODD: mul.lo.u32 %r5, %r1, 3; st.shared.u32 [%r3], %r5; barrier.sync 0; sub.u32 %r6, %r1, 1;\n\
         JOIN: and.b32 %r6, %r6, 255; shl.b32 %r7, %r6, 2; add.u32 %r8, %r9, %r7; ld.shared.u32 %r10, [%r8];\n\
         mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r10; ret;",
    );
    let mut out = vec![0u32; 256];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (256, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    for t in 0..256u32 {
        let nb = if t % 2 == 1 { t - 1 } else { (t + 1) % 256 };
        assert_eq!(out[t as usize], nb * 3, "thread {t}");
    }
}

/// The PTX of the test above with `bar.sync` (aligned) on both paths: the
/// odd and even lanes of every warp meet at barrier 0 from two instructions,
/// which an aligned barrier forbids (a compiler that marks a barrier aligned
/// below a branch it wrongly thought uniform writes exactly this).
#[test]
fn an_aligned_barrier_reached_from_two_instructions_by_one_warp_faults() {
    let m = module(
        ".param .u64 out",
        ".shared .align 4 .b32 slot[256];\n\
         ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; mov.u32 %r9, slot; shl.b32 %r2, %r1, 2; add.u32 %r3, %r9, %r2;\n\
         and.b32 %r4, %r1, 1; setp.eq.u32 %p1, %r4, 1; @%p1 bra ODD;\n\
         st.shared.u32 [%r3], %r1; bar.sync 0; bra.uni JOIN;\n\
         ODD: st.shared.u32 [%r3], %r1; barrier.sync.aligned 0;\n\
         JOIN: ret;",
    );
    let out = vec![0u32; 64];
    let env = Env::new().with(&out);
    let err = run(&m, "k", dims((1, 1, 1), (64, 1, 1)), &Params::new().value(out.as_ptr() as u64), &env).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Fault::ExecutionError { .. }), "{text}");
    assert!(text.contains("from another instruction") && text.contains("aligned barrier"), "{text}");
    assert!(text.contains("bar.sync 0") && text.contains("barrier.sync.aligned 0"), "{text}");
}

/// Different warps may reach one aligned barrier from different
/// instructions: producers announce with `bar.arrive`, consumers wait with
/// `bar.sync` (the PTX ISA's producer/consumer example).
#[test]
fn warps_may_meet_at_an_aligned_barrier_from_different_instructions() {
    let m = module(
        ".param .u64 out",
        ".shared .align 4 .b32 v[32];\n\
         ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; mov.u32 %r3, v; setp.ge.u32 %p1, %r1, 32; @%p1 bra CONSUME;\n\
         shl.b32 %r2, %r1, 2; add.u32 %r4, %r3, %r2; mul.lo.u32 %r5, %r1, 7; st.shared.u32 [%r4], %r5; bar.arrive 1, 64; ret;\n\
         CONSUME: bar.sync 1, 64; sub.u32 %r6, %r1, 32; shl.b32 %r7, %r6, 2; add.u32 %r8, %r3, %r7; ld.shared.u32 %r9, [%r8];\n\
         mul.wide.u32 %rd2, %r6, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r9; ret;",
    );
    let mut out = vec![0u32; 32];
    let env = Env::new().with(&out);
    run(&m, "k", dims((1, 1, 1), (64, 1, 1)), &Params::new().value(out.as_mut_ptr() as u64), &env).unwrap();
    for t in 0..32u32 {
        assert_eq!(out[t as usize], t * 7);
    }
}

#[test]
fn an_intra_block_spin_wait_completes() {
    // Thread 0 spins until the last thread of the block (the last to run in
    // a round) raises a flag in shared memory.
    let m = module(
        ".param .u64 out",
        ".shared .align 4 .b32 flag;\n\
         ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; mov.u32 %r2, %ntid.x; sub.u32 %r3, %r2, 1;\n\
         setp.eq.u32 %p1, %r1, 0; @%p1 bra WAIT; setp.ne.u32 %p2, %r1, %r3; @%p2 bra DONE;\n\
         st.release.cta.shared.u32 [flag], 7; bra.uni DONE;\n\
         WAIT: ld.acquire.cta.shared.u32 %r4, [flag]; setp.eq.u32 %p3, %r4, 0; @%p3 bra WAIT;\n\
         st.global.u32 [%rd1], %r4;\n\
         DONE: ret;",
    );
    let mut out = [0u32; 1];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (256, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    assert_eq!(out[0], 7);
}

fn flag_between_blocks() -> Module {
    // Block 0 waits for a flag that block 1 (started after it) sets.
    module(
        ".param .u64 flag",
        "ld.param.u64 %rd1, [flag]; mov.u32 %r1, %ctaid.x; setp.ne.u32 %p1, %r1, 0; @%p1 bra SET;\n\
         WAIT: ld.acquire.gpu.global.u32 %r2, [%rd1]; setp.eq.u32 %p2, %r2, 0; @%p2 bra WAIT;\n\
         st.global.u32 [%rd1+4], %r2; ret;\n\
         SET: st.release.gpu.global.u32 [%rd1], 5; ret;",
    )
}

#[test]
fn a_block_waiting_for_a_later_block_completes() {
    let m = flag_between_blocks();
    for workers in [1, 2] {
        let mut flag = [0u32; 2];
        let env = Env::new().with(&flag);
        let options = LaunchOptions {
            workers,
            ..Default::default()
        };
        let p = Params::new().value(flag.as_mut_ptr() as u64);
        launch(
            &m,
            "k",
            dims((2, 1, 1), (32, 1, 1)),
            &p.pointers(),
            &env,
            &options,
        )
        .unwrap();
        assert_eq!(flag, [5, 5], "with {workers} workers");
    }
}

#[test]
fn a_spin_that_never_ends_times_out_naming_the_instruction() {
    // With one worker keeping one block resident, block 1 never starts.
    let m = flag_between_blocks();
    let mut flag = [0u32; 2];
    let env = Env::new().with(&flag);
    let options = LaunchOptions {
        workers: 1,
        resident: 1,
        timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let p = Params::new().value(flag.as_mut_ptr() as u64);
    let err = launch(
        &m,
        "k",
        dims((2, 1, 1), (32, 1, 1)),
        &p.pointers(),
        &env,
        &options,
    )
    .unwrap_err();
    match &err {
        Fault::Timeout {
            kernel,
            threads,
            running,
            ..
        } => {
            assert_eq!(kernel, "k");
            assert_eq!(*running, 32);
            assert_eq!(threads[0].thread.block, (0, 0, 0));
            assert!(
                threads[0]
                    .at
                    .instruction
                    .contains("ld.acquire.gpu.global.u32")
                    || threads[0].at.instruction.contains("setp")
                    || threads[0].at.instruction.contains("bra"),
                "{err}"
            );
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(err.to_string().contains("still running after"), "{err}");
}

#[test]
fn threads_waiting_at_different_barriers_are_a_deadlock() {
    let m = module(
        "",
        "mov.u32 %r1, %tid.x; setp.lt.u32 %p1, %r1, 64; @%p1 bra LOW; bar.sync 1; ret; LOW: bar.sync 0; ret;",
    );
    let err = run(
        &m,
        "k",
        dims((1, 1, 1), (128, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap_err();
    match &err {
        Fault::Deadlock {
            block,
            threads,
            waiting,
            ..
        } => {
            assert_eq!(*block, (0, 0, 0));
            assert_eq!(*waiting, 128);
            assert!(threads.iter().any(|t| t.waiting_for.contains("barrier 0")));
            assert!(threads.iter().any(|t| t.waiting_for.contains("barrier 1")));
            assert!(threads.iter().any(|t| t.at.instruction == "bar.sync 1"));
        }
        other => panic!("expected a deadlock, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("deadlock in block (0, 0, 0)") && text.contains("waits for barrier"),
        "{text}"
    );
}

#[test]
fn a_shuffle_whose_partners_wait_at_a_barrier_is_a_deadlock() {
    let m = module(
        "",
        "mov.u32 %r1, %laneid; setp.lt.u32 %p1, %r1, 16; @%p1 bra SHFL; bar.sync 0; ret;\n\
         SHFL: shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1; bar.sync 0; ret;",
    );
    let err = run(
        &m,
        "k",
        dims((1, 1, 1), (32, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap_err();
    assert!(matches!(err, Fault::Deadlock { waiting: 32, .. }), "{err}");
    assert!(err.to_string().contains("member mask 0xffffffff"), "{err}");
}

#[test]
fn exited_threads_do_not_hold_up_a_barrier() {
    let m = module(
        ".param .u64 out",
        "ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; setp.ge.u32 %p1, %r1, 40; @%p1 exit;\n\
         bar.sync 0; atom.global.add.u32 %r2, [%rd1], 1; ret;",
    );
    let mut out = [0u32; 1];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (100, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    assert_eq!(out[0], 40);
}

#[test]
fn a_barrier_with_a_thread_count_completes_with_those_warps() {
    // Warps 0 and 1 meet at barrier 1 with a count of 64 while warps 2 and
    // 3 never touch it.
    let m = module(
        ".param .u64 out",
        ".shared .align 4 .b32 v[64];\n\
         ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; setp.ge.u32 %p1, %r1, 64; @%p1 bra DONE;\n\
         shl.b32 %r2, %r1, 2; mov.u32 %r3, v; add.u32 %r4, %r3, %r2; st.shared.u32 [%r4], %r1;\n\
         bar.sync 1, 64; xor.b32 %r5, %r1, 63; shl.b32 %r6, %r5, 2; add.u32 %r7, %r3, %r6; ld.shared.u32 %r8, [%r7];\n\
         mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r8;\n\
         DONE: ret;",
    );
    let mut out = vec![0u32; 64];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (128, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    for t in 0..64u32 {
        assert_eq!(out[t as usize], t ^ 63);
    }
}

#[test]
fn warp_groups_with_disjoint_masks_are_independent() {
    // Lanes 0-15 and 16-31 shuffle within their half, on different
    // instructions; segments of 8 lanes through the `c` operand.
    let m = module(
        ".param .u64 out",
        "ld.param.u64 %rd1, [out]; mov.u32 %r1, %laneid; mul.lo.u32 %r2, %r1, 10; setp.lt.u32 %p1, %r1, 16; @%p1 bra LOW;\n\
         shfl.sync.bfly.b32 %r3|%p2, %r2, 1, 31, 0xffff0000; bra.uni NEXT;\n\
         LOW: shfl.sync.bfly.b32 %r3|%p2, %r2, 2, 31, 0x0000ffff;\n\
         NEXT: shfl.sync.idx.b32 %r4, %r2, 3, 0x181f, -1; shfl.sync.up.b32 %r5|%p3, %r2, 2, 0x1800, -1; selp.u32 %r6, 1, 0, %p3;\n\
         shfl.sync.down.b32 %r7|%p4, %r2, 4, 0x181f, -1; selp.u32 %r8, 1, 0, %p4;\n\
         mul.wide.u32 %rd2, %r1, 24; add.s64 %rd3, %rd1, %rd2;\n\
         st.global.v2.u32 [%rd3], {%r3, %r4}; st.global.v2.u32 [%rd3+8], {%r5, %r6}; st.global.v2.u32 [%rd3+16], {%r7, %r8}; ret;",
    );
    let mut out = vec![0u32; 32 * 6];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (32, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    for l in 0..32u32 {
        let r = &out[l as usize * 6..l as usize * 6 + 6];
        let partner = if l < 16 { l ^ 2 } else { l ^ 1 };
        assert_eq!(r[0], partner * 10, "bfly, lane {l}");
        assert_eq!(
            r[1],
            ((l & !7) | 3) * 10,
            "idx 3 within 8-lane segments, lane {l}"
        );
        let up_ok = l % 8 >= 2;
        assert_eq!(
            (r[2], r[3]),
            (if up_ok { (l - 2) * 10 } else { l * 10 }, up_ok as u32),
            "up by 2 in segments, lane {l}"
        );
        let down_ok = l % 8 + 4 <= 7;
        assert_eq!(
            (r[4], r[5]),
            (if down_ok { (l + 4) * 10 } else { l * 10 }, down_ok as u32),
            "down by 4 in segments, lane {l}"
        );
    }
}

#[test]
fn activemask_and_votes_in_divergent_code() {
    let m = module(
        ".param .u64 out",
        "ld.param.u64 %rd1, [out]; mov.u32 %r1, %laneid; and.b32 %r2, %r1, 1; setp.eq.u32 %p1, %r2, 1; @%p1 bra ODD;\n\
         activemask.b32 %r3; vote.sync.ballot.b32 %r4, %p1, %r3; bra.uni JOIN;\n\
         ODD: activemask.b32 %r3; setp.gt.u32 %p2, %r1, 20; vote.sync.ballot.b32 %r4, %p2, %r3;\n\
         JOIN: bar.warp.sync -1; setp.lt.u32 %p3, %r1, 31; vote.sync.all.pred %p4, %p3, -1; selp.u32 %r5, 1, 0, %p4;\n\
         mov.u32 %r6, 7; setp.lt.u32 %p6, %r1, 8; @!%p1 vote.sync.uni.pred %p5, %p6, 0x55555555; @!%p1 selp.u32 %r6, 1, 0, %p5;\n\
         mul.wide.u32 %rd2, %r1, 16; add.s64 %rd3, %rd1, %rd2; st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6}; ret;",
    );
    let mut out = vec![0u32; 32 * 4];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (32, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    for l in 0..32u32 {
        let r = &out[l as usize * 4..l as usize * 4 + 4];
        let odd = l % 2 == 1;
        assert_eq!(
            r[0],
            if odd { 0xAAAA_AAAA } else { 0x5555_5555 },
            "activemask: the lanes on the same path, lane {l}"
        );
        assert_eq!(
            r[1],
            if odd {
                0xAAAA_AAAA & !((1 << 21) - 1)
            } else {
                0
            },
            "ballot over the active lanes, lane {l}"
        );
        assert_eq!(r[2], 0, "vote.all: lane 31 votes false");
        assert_eq!(
            r[3],
            if odd { 7 } else { 0 },
            "vote.uni over the even lanes: lanes below 8 differ from the rest"
        );
    }
}

#[test]
fn a_global_access_outside_every_region_faults_with_its_address() {
    let m = module(
        ".param .u64 p",
        "ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x; mul.wide.u32 %rd2, %r1, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r1; ret;",
    );
    let mut buf = vec![0u32; 16];
    let env = Env::new().with(&buf);
    let base = buf.as_mut_ptr() as u64;
    let err = run(
        &m,
        "k",
        dims((2, 1, 1), (17, 1, 1)),
        &Params::new().value(base),
        &env,
    )
    .unwrap_err();
    match &err {
        Fault::MemoryViolation {
            kernel,
            thread,
            address,
            size,
            space,
            write,
            at,
        } => {
            assert_eq!(kernel, "k");
            assert_eq!(thread.thread, (16, 0, 0));
            assert_eq!(*address, base + 64);
            assert_eq!((*size, *space, *write), (4, "global", true));
            assert_eq!(at.instruction, "st.global.u32 [%rd3], %r1");
        }
        other => panic!("expected a memory violation, got {other}"),
    }
    assert!(
        err.to_string().contains("wrote 4 bytes at global address"),
        "{err}"
    );
    assert_eq!(buf[15], 15, "threads in bounds ran");
}

#[test]
fn shared_and_local_accesses_are_bounds_checked() {
    let m = module(
        "",
        ".shared .align 4 .b32 s[4];\n\
         mov.u32 %r1, %tid.x; shl.b32 %r2, %r1, 2; mov.u32 %r3, s; add.u32 %r4, %r3, %r2; ld.shared.u32 %r5, [%r4]; ret;",
    );
    let err = run(
        &m,
        "k",
        dims((1, 1, 1), (8, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Fault::MemoryViolation { space: "shared", address: 16, write: false, thread, .. } if thread.thread == (4, 0, 0)),
        "{err}"
    );

    let m = module(
        "",
        ".local .align 4 .b8 depot[8];\n mov.u64 %rd1, depot; cvta.local.u64 %rd2, %rd1; st.u32 [%rd2+4], 1; st.u32 [%rd2+8], 2; ret;",
    );
    let err = run(
        &m,
        "k",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap_err();
    assert!(
        matches!(
            &err,
            Fault::MemoryViolation {
                space: "generic",
                write: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("st.u32 [%rd2+8], 2"), "{err}");
}

#[test]
fn misaligned_accesses_fault() {
    let m = module(
        ".param .u64 p",
        "ld.param.u64 %rd1, [p]; ld.global.u32 %r1, [%rd1+2]; ret;",
    );
    let buf = vec![0u32; 4];
    let env = Env::new().with(&buf);
    let err = run(
        &m,
        "k",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new().value(buf.as_ptr() as u64),
        &env,
    )
    .unwrap_err();
    assert!(
        matches!(&err, Fault::MisalignedAddress { size: 4, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("misaligned address"), "{err}");
}

#[test]
fn trap_names_the_thread_and_block() {
    let m = module(
        "",
        "mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; setp.eq.u32 %p1, %r1, 5; setp.eq.u32 %p2, %r2, 1; and.pred %p3, %p1, %p2; @%p3 trap; ret;",
    );
    let err = run(
        &m,
        "k",
        dims((3, 1, 1), (32, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap_err();
    match &err {
        Fault::Trap { thread, at, .. } => {
            assert_eq!((thread.block, thread.thread), ((1, 0, 0), (5, 0, 0)));
            assert_eq!(at.instruction, "@%p3 trap");
        }
        other => panic!("expected a trap, got {other}"),
    }
    assert!(
        err.to_string()
            .contains("thread (5, 0, 0) of block (1, 0, 0) executed `trap`"),
        "{err}"
    );
}

#[test]
fn unsupported_instructions_fault_only_when_reachable() {
    let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n\
        .func uses_wgmma()\n{\nwgmma.fence.sync.aligned;\nret;\n}\n\
        .func plain(.param .b32 x)\n{\nret;\n}\n\
        .visible .entry clean()\n{\nret;\n}\n\
        .visible .entry direct()\n{\ncall.uni uses_wgmma;\nret;\n}\n\
        .visible .entry indirect()\n{\n.reg .b64 %rd<2>;\nmov.u64 %rd1, uses_wgmma;\n\
        { prototype_0 : .callprototype ()_ (); call %rd1, (), prototype_0; }\nret;\n}\n";
    let m = Module::parse(ptx).unwrap();
    run(
        &m,
        "clean",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap();
    for k in ["direct", "indirect"] {
        let err = run(
            &m,
            k,
            dims((1, 1, 1), (1, 1, 1)),
            &Params::new(),
            &Env::new(),
        )
        .unwrap_err();
        match &err {
            Fault::Unsupported { kernel, at, reason } => {
                assert_eq!(kernel, k);
                assert_eq!(at.instruction, "wgmma.fence.sync.aligned");
                assert_eq!(at.function, "uses_wgmma");
                assert!(reason.contains("wgmma"), "{reason}");
            }
            other => panic!("{k}: expected Unsupported, got {other}"),
        }
    }
}

/// Regression (cuda-core's `module_errors_are_reported` under the emulator):
/// a name that is no PTX instruction loaded, and only a launch reaching it
/// was refused, where the driver's JIT refuses the module, so a program whose
/// `ptx_asm!` held a typo ran its other kernels emulated and none on the GPU.
#[test]
fn names_outside_ptx_fail_the_module_load_as_the_jit_does() {
    let module = |body: &str| {
        format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .func helper()\n{{\n{body}\nret;\n}}\n.visible .entry clean()\n{{\nret;\n}}\n"
        )
    };
    let err = Module::parse(&module("bogus.instruction;")).map(drop).unwrap_err().to_string();
    assert!(err.contains("`bogus` is not the name of a PTX instruction"), "{err}");
    assert!(err.contains("line 6"), "the error names the instruction's line: {err}");
    // A PTX instruction the VM does not run keeps the module loadable: the
    // kernels that do not reach it run.
    let m = Module::parse(&module("pmevent 1;")).unwrap();
    run(&m, "clean", dims((1, 1, 1), (1, 1, 1)), &Params::new(), &Env::new()).unwrap();
}

#[test]
fn vprintf_hands_format_and_arguments_to_the_embedder() {
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);\n\
        .global .align 1 .b8 fmt[12] = {116, 61, 37, 117, 32, 120, 61, 37, 108, 108, 100, 0};\n\
        .visible .entry k(.param .u64 out)\n{\n.local .align 8 .b8 depot[16];\n.reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n\
        mov.u64 %rd1, depot; cvta.local.u64 %rd2, %rd1; mov.u32 %r1, %tid.x; st.local.u32 [%rd1], %r1; st.local.u64 [%rd1+8], -5;\n\
        mov.u64 %rd3, fmt; cvta.global.u64 %rd4, %rd3;\n\
        { .param .b64 param0; .param .b64 param1; .param .b32 retval0;\n\
        st.param.b64 [param0], %rd4; st.param.b64 [param1], %rd2; call.uni (retval0), vprintf, (param0, param1); ld.param.b32 %r2, [retval0]; }\n\
        ld.param.u64 %rd5, [out]; mul.wide.u32 %rd6, %r1, 4; add.s64 %rd7, %rd5, %rd6; st.global.u32 [%rd7], %r2; ret;\n}\n";
    let m = Module::parse(ptx).unwrap();
    let mut out = [0u32; 2];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (2, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    let mut printed = env.printed.lock().unwrap().clone();
    printed.sort();
    assert_eq!(
        printed,
        vec![
            ("t=%u x=%lld".to_string(), vec![0, (-5i64) as u64]),
            ("t=%u x=%lld".to_string(), vec![1, (-5i64) as u64])
        ]
    );
    assert_eq!(out, [2, 2], "vprintf returns the number of arguments");
}

/// `cudaGraphSetConditional(handle, value)` from thread 1 of a block.
const SET_CONDITIONAL_PTX: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\
    .extern .func cudaGraphSetConditional(.param .b64 cudaGraphSetConditional_param_0, .param .b32 cudaGraphSetConditional_param_1);\n\
    .visible .entry k(.param .u64 h)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n\
    ld.param.u64 %rd1, [h]; mov.u32 %r1, %tid.x; setp.ne.u32 %p1, %r1, 1; @%p1 bra DONE; add.s32 %r2, %r1, 6;\n\
    { .param .b64 param0; .param .b32 param1;\n\
    st.param.b64 [param0], %rd1; st.param.b32 [param1], %r2; call.uni cudaGraphSetConditional, (param0, param1); }\n\
    DONE: ret;\n}\n";

#[test]
fn set_conditional_hands_handle_and_value_to_the_embedder() {
    let m = Module::parse(SET_CONDITIONAL_PTX).unwrap();
    let env = Env::new();
    let handle = 0x1234_5678_9abc_def0u64;
    run(&m, "k", dims((1, 1, 1), (32, 1, 1)), &Params::new().value(handle), &env).unwrap();
    assert_eq!(*env.conditions.lock().unwrap(), vec![(handle, 7)]);
}

#[test]
fn set_conditional_fails_the_launch_where_the_embedder_has_no_graphs() {
    struct NoGraphs;
    impl ptx_vm::Environment for NoGraphs {
        fn valid_regions(&self) -> Vec<std::ops::Range<u64>> {
            Vec::new()
        }
        fn printf(&self, _format: &[u8], _args: *const u8) {}
    }
    let m = Module::parse(SET_CONDITIONAL_PTX).unwrap();
    let params = Params::new().value(1u64);
    let options = ptx_vm::LaunchOptions::default();
    let err = ptx_vm::launch(&m, "k", dims((1, 1, 1), (32, 1, 1)), &params.pointers(), &NoGraphs, &options).unwrap_err();
    assert!(err.to_string().contains("cudaGraphSetConditional is not emulated"), "{err}");
}

#[test]
fn vprintf_strings_in_local_and_shared_memory_reach_the_embedder() {
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);\n\
        .global .align 1 .b8 fmt[6] = {37, 115, 47, 37, 115, 0};\n\
        .visible .entry k()\n{\n.local .align 8 .b8 depot[24];\n.shared .align 1 .b8 sh[4];\n.reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n\
        mov.u64 %rd1, depot; cvta.local.u64 %rd2, %rd1; st.local.u32 [%rd1+16], 0x006f6c; add.s64 %rd3, %rd2, 16; st.local.u64 [%rd1], %rd3;\n\
        st.shared.u32 [sh], 0x006968; mov.u64 %rd4, sh; cvta.shared.u64 %rd5, %rd4; st.local.u64 [%rd1+8], %rd5;\n\
        mov.u64 %rd6, fmt; cvta.global.u64 %rd7, %rd6;\n\
        { .param .b64 param0; .param .b64 param1; .param .b32 retval0;\n\
        st.param.b64 [param0], %rd7; st.param.b64 [param1], %rd2; call.uni (retval0), vprintf, (param0, param1); }\n\
        ret;\n}\n";
    let m = Module::parse(ptx).unwrap();
    let env = Env::new();
    run(&m, "k", dims((1, 1, 1), (1, 1, 1)), &Params::new(), &env).unwrap();
    assert_eq!(
        *env.strings.lock().unwrap(),
        vec!["lo".to_string(), "hi".to_string()]
    );
}

#[test]
fn invalid_launches_are_refused_with_a_reason() {
    let m = module(".param .u32 x", "ret;");
    let bad = |d, p: &Params| run(&m, "k", d, p, &Env::new()).unwrap_err();
    let one = Params::new().value(1u32);
    assert!(matches!(
        bad(dims((1, 1, 1), (2048, 1, 1)), &one),
        Fault::InvalidLaunch { .. }
    ));
    assert!(matches!(
        bad(dims((0, 1, 1), (32, 1, 1)), &one),
        Fault::InvalidLaunch { .. }
    ));
    let err = bad(dims((1, 1, 1), (32, 1, 1)), &Params::new());
    assert!(
        err.to_string()
            .contains("takes 1 parameters, the launch passed 0"),
        "{err}"
    );
    let err = run(&m, "nope", dims((1, 1, 1), (1, 1, 1)), &one, &Env::new()).unwrap_err();
    assert!(err.to_string().contains("no such kernel"), "{err}");
    let options = LaunchOptions {
        cluster: Some((3, 1, 1)),
        ..Default::default()
    };
    let err = launch(
        &m,
        "k",
        dims((4, 1, 1), (32, 1, 1)),
        &one.pointers(),
        &Env::new(),
        &options,
    )
    .unwrap_err();
    assert!(err.to_string().contains("must tile the grid"), "{err}");
}

#[test]
fn parse_errors_name_line_and_column() {
    let err = Module::parse(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<3>;\n  add.s32 %r1, %r2, %nope;\n}\n").unwrap_err();
    assert_eq!((err.line, err.column), (7, 3), "{err}");
    assert!(err.to_string().contains("`%nope` is not declared"), "{err}");
    let err = Module::parse(".version 8.0\n.visible .entry k()\n{\n  add.s32 %r1, %r2 %r3;\n}\n")
        .unwrap_err();
    assert!(err.message.contains("expected `;`"), "{err}");
    let err =
        Module::parse(".version 8.0\n.visible .entry k()\n{\n  bra NOWHERE;\n}\n").unwrap_err();
    assert!(err.message.contains("NOWHERE"), "{err}");
}

#[test]
fn mbarrier_phases_order_a_producer_and_consumers() {
    // Every thread writes its slot, arrives, and waits for the phase to
    // complete (try_wait.parity in a loop), twice; then reads a neighbour's
    // slot written in the second phase.
    let m = module(
        ".param .u64 out",
        ".shared .align 8 .b64 bar;\n.shared .align 4 .b32 slot[64];\n\
         ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; setp.eq.u32 %p1, %r1, 0;\n\
         @%p1 mbarrier.init.shared::cta.b64 [bar], 64; bar.sync 0;\n\
         mov.u32 %r2, slot; shl.b32 %r3, %r1, 2; add.u32 %r4, %r2, %r3; st.shared.u32 [%r4], %r1;\n\
         mbarrier.arrive.shared::cta.b64 %rd2, [bar];\n\
         W1: mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0; @!%p2 bra W1;\n\
         mul.lo.u32 %r5, %r1, 3; st.shared.u32 [%r4], %r5;\n\
         mbarrier.arrive.shared::cta.b64 %rd3, [bar];\n\
         W2: mbarrier.test_wait.shared::cta.b64 %p3, [bar], %rd3; @!%p3 bra W2;\n\
         add.u32 %r6, %r1, 1; and.b32 %r6, %r6, 63; shl.b32 %r7, %r6, 2; add.u32 %r8, %r2, %r7; ld.shared.u32 %r9, [%r8];\n\
         mul.wide.u32 %rd4, %r1, 4; add.s64 %rd5, %rd1, %rd4; st.global.u32 [%rd5], %r9; ret;",
    );
    let mut out = vec![0u32; 64];
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (64, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    for t in 0..64u32 {
        assert_eq!(out[t as usize], ((t + 1) % 64) * 3, "thread {t}");
    }
}

#[test]
fn match_redux_and_elect_over_partial_masks() {
    let m = module(
        ".param .u64 out",
        "ld.param.u64 %rd1, [out]; mov.u32 %r1, %laneid; shr.u32 %r2, %r1, 3; cvt.u64.u32 %rd2, %r2;\n\
         match.all.sync.b64 %r3|%p1, %rd2, 0x000000ff; @!%p1 mov.u32 %r3, 99;\n\
         match.any.sync.b32 %r4, %r2, -1;\n\
         sub.s32 %r5, 16, %r1; redux.sync.min.s32 %r6, %r5, -1; redux.sync.xor.b32 %r7, %r1, 0xffff0000;\n\
         setp.lt.u32 %p2, %r1, 16; @%p2 redux.sync.max.u32 %r7, %r1, 0x0000ffff;\n\
         setp.ge.u32 %p3, %r1, 8; @%p3 elect.sync %r8|%p4, 0xffffff00; selp.u32 %r9, 1, 0, %p4;\n\
         mul.wide.u32 %rd3, %r1, 24; add.s64 %rd4, %rd1, %rd3;\n\
         st.global.v2.u32 [%rd4], {%r3, %r4}; st.global.v2.u32 [%rd4+8], {%r6, %r7}; st.global.v2.u32 [%rd4+16], {%r8, %r9}; ret;",
    );
    let mut out = vec![0u32; 32 * 6];
    let env = Env::new().with(&out);
    // match.all over 0xff is executed by every lane: only lanes 0-7 are in
    // its mask, and the PTX ISA leaves a call by a lane outside the mask
    // undefined, so the VM refuses it (the guarded form below is right).
    let result = run(
        &m,
        "k",
        dims((1, 1, 1), (32, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    );
    match &result {
        Err(e @ Fault::ExecutionError { .. }) => {
            let text = e.to_string();
            assert!(text.contains("member mask 0x000000ff leaves it out") && text.contains("match.all"), "{text}");
        }
        other => panic!("lanes 8-31 executing a match.all whose mask leaves them out must fault: {other:?}"),
    }

    let m = module(
        ".param .u64 out",
        "ld.param.u64 %rd1, [out]; mov.u32 %r1, %laneid; shr.u32 %r2, %r1, 3; cvt.u64.u32 %rd2, %r2; mov.u32 %r3, 77;\n\
         setp.lt.u32 %p5, %r1, 8; @%p5 match.all.sync.b64 %r3|%p1, %rd2, 0x000000ff;\n\
         match.any.sync.b32 %r4, %r2, -1;\n\
         sub.s32 %r5, 16, %r1; redux.sync.min.s32 %r6, %r5, -1;\n\
         setp.lt.u32 %p2, %r1, 16; @%p2 redux.sync.max.u32 %r7, %r1, 0x0000ffff; @!%p2 redux.sync.xor.b32 %r7, %r1, 0xffff0000;\n\
         mov.u32 %r8, 0; mov.u32 %r9, 0; setp.ge.u32 %p3, %r1, 8; @%p3 elect.sync %r8|%p4, 0xffffff00; @%p3 selp.u32 %r9, 1, 0, %p4;\n\
         mul.wide.u32 %rd3, %r1, 24; add.s64 %rd4, %rd1, %rd3;\n\
         st.global.v2.u32 [%rd4], {%r3, %r4}; st.global.v2.u32 [%rd4+8], {%r6, %r7}; st.global.v2.u32 [%rd4+16], {%r8, %r9}; ret;",
    );
    let env = Env::new().with(&out);
    run(
        &m,
        "k",
        dims((1, 1, 1), (32, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    let xor_hi = (16..32u32).fold(0, |x, l| x ^ l);
    for l in 0..32u32 {
        let r = &out[l as usize * 6..l as usize * 6 + 6];
        assert_eq!(
            r[0],
            if l < 8 { 0xff } else { 77 },
            "match.all: lanes 0-7 all hold 0, lane {l}"
        );
        assert_eq!(
            r[1],
            0xff << (8 * (l / 8)),
            "match.any by groups of 8, lane {l}"
        );
        assert_eq!(r[2] as i32, 16 - 31, "redux.min.s32, lane {l}");
        assert_eq!(
            r[3],
            if l < 16 { 15 } else { xor_hi },
            "redux max/xor per half, lane {l}"
        );
        if l >= 8 {
            assert_eq!(
                (r[4], r[5]),
                (8, (l == 8) as u32),
                "elect.sync picks the lowest lane of the mask, lane {l}"
            );
        }
    }
}

#[test]
fn runaway_recursion_fails_instead_of_exhausting_memory() {
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .func forever(.param .b64 x)\n{\n.local .align 8 .b8 depot[64];\n.reg .b64 %rd<3>;\n\
        ld.param.b64 %rd1, [x]; add.s64 %rd2, %rd1, 1; mov.u64 %rd1, depot; st.local.b64 [%rd1], %rd2;\n\
        { .param .b64 param0; st.param.b64 [param0], %rd2; call.uni forever, (param0); }\nret;\n}\n\
        .visible .entry k()\n{\n{ .param .b64 param0; st.param.b64 [param0], 0; call.uni forever, (param0); }\nret;\n}\n";
    let m = Module::parse(ptx).unwrap();
    let err = run(
        &m,
        "k",
        dims((1, 1, 1), (64, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap_err();
    match &err {
        Fault::ExecutionError { reason, at, .. } => {
            assert!(reason.contains("call stack deeper than"), "{reason}");
            assert_eq!(at.function, "forever");
        }
        other => panic!("expected an execution error, got {other}"),
    }
}

#[test]
fn calls_of_external_functions_are_unsupported_where_they_are() {
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .extern .func (.param .b64 func_retval0) malloc(.param .b64 size);\n\
        .visible .entry k()\n{\n.reg .b64 %rd<2>;\n\
        { .param .b64 param0; .param .b64 retval0; st.param.b64 [param0], 16; call.uni (retval0), malloc, (param0); ld.param.b64 %rd1, [retval0]; }\nret;\n}\n";
    let m = Module::parse(ptx).unwrap();
    let err = run(
        &m,
        "k",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new(),
        &Env::new(),
    )
    .unwrap_err();
    match &err {
        Fault::Unsupported { at, reason, .. } => {
            assert_eq!(at.instruction, "call.uni (retval0), malloc, (param0)");
            assert!(
                reason.contains("`malloc` is an external function"),
                "{reason}"
            );
        }
        other => panic!("expected Unsupported, got {other}"),
    }
}

#[test]
fn absurd_declarations_are_errors_not_crashes() {
    let huge = ".version 8.0\n.target sm_80\n.address_size 64\n.global .align 8 .b8 big[1099511627776][1099511627776];\n.global .u32 after;\n.shared .b8 s1[1099511627776][1099511627776];\n.shared .b8 s2[4];\n";
    let err = Module::parse(huge).unwrap_err();
    assert!(err.message.contains("the VM allows"), "{err}");
    let garbage = [
        "",
        ".version",
        ".visible .entry",
        ".visible .entry k(",
        ".visible .entry k() { mov.u32 %r1, ; }",
        "{{{{",
        ".global .b32 x = {1, 2",
        "@ @ @",
    ];
    for text in garbage {
        let _ = Module::parse(text);
    }
}
