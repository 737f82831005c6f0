//! Fibers: one stack per emulated GPU thread, switched cooperatively on one
//! OS thread (x86-64 System V only).
//!
//! A switch saves the callee-saved registers and a resume address on the
//! current stack, stores the stack pointer, and loads the other fiber's. A
//! new fiber's stack holds only its entry function's address, so the first
//! switch to it "returns" into that function.

use crate::mapping::{mmap, mprotect, munmap, MAP_ANONYMOUS, MAP_NORESERVE, MAP_PRIVATE, PROT_NONE, PROT_READ, PROT_WRITE};

const GUARD: usize = 4096;

/// Bytes of stack per emulated thread (`OXIDE_EMULATE_STACK_KB` overrides).
pub(crate) fn stack_size() -> usize {
    static SIZE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        std::env::var("OXIDE_EMULATE_STACK_KB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or(512 * 1024, |kb| (kb.max(16) * 1024).next_multiple_of(GUARD))
    })
}

/// A fiber stack: `size` usable bytes above a guard page.
pub(crate) struct Stack {
    base: *mut u8,
    size: usize,
}

// SAFETY: a stack is plain memory owned by this value.
unsafe impl Send for Stack {}

impl Stack {
    /// Maps a new stack (lazily backed, with a guard page at the bottom).
    pub(crate) fn new() -> Option<Stack> {
        let size = stack_size();
        // SAFETY: an anonymous private mapping; no existing memory is touched.
        let base = unsafe {
            mmap(std::ptr::null_mut(), size + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        };
        if base as isize == -1 {
            return None;
        }
        // SAFETY: the first page of the mapping just made; a stack overflow
        // then faults instead of overwriting the next stack.
        unsafe { mprotect(base, GUARD, PROT_NONE) };
        Some(Stack { base: base.cast(), size: size + GUARD })
    }

    fn top(&self) -> usize {
        self.base as usize + self.size
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; no fiber runs on it.
        unsafe { munmap(self.base.cast(), self.size) };
    }
}

/// Prepares `stack` so that switching to the returned stack pointer calls
/// `entry()` on it, as the outermost frame (its return address is 0, where
/// unwinders and debuggers stop). `entry` must never return (it switches
/// away for good); it finds its work through thread-local state.
pub(crate) fn prepare(stack: &Stack, entry: extern "C" fn() -> !) -> usize {
    // `switch` ends with `ret`: it pops `entry`, leaving the stack as a call
    // would (aligned to 16 plus the return-address slot).
    let rsp = (stack.top() & !15) - 32;
    // SAFETY: the 16 bytes at `rsp` lie inside the stack's mapping.
    unsafe {
        (rsp as *mut usize).write(entry as *const () as usize);
        ((rsp + 8) as *mut usize).write(0);
    }
    rsp
}

/// Saves the running context, storing its stack pointer in `*save`, and
/// resumes the context whose stack pointer is `to`.
///
/// Written as inline assembly in an ordinary function (not a naked one,
/// whose module-level assembly would reach the device linker's input): the
/// callee-saved registers are declared clobbered or pushed, the resume
/// address is pushed, and `ret` enters the other context.
///
/// # Safety
/// `to` must come from [`prepare`] or from an earlier `switch`'s `*save`, of
/// a context that is not running, and its stack must still be mapped.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub(crate) unsafe fn switch(save: *mut usize, to: usize) {
    // SAFETY: the caller's contract; every register the other context may
    // change is saved (rbx, rbp pushed) or declared clobbered.
    unsafe {
        core::arch::asm!(
            "push rbp",
            "push rbx",
            "lea rax, [rip + 2f]",
            "push rax",
            "mov [rdi], rsp",
            "mov rsp, rsi",
            "ret",
            "2:",
            "pop rbx",
            "pop rbp",
            inout("rdi") save => _,
            inout("rsi") to => _,
            out("r12") _,
            out("r13") _,
            out("r14") _,
            out("r15") _,
            clobber_abi("C"),
        )
    }
}

/// Other architectures have no context switch yet: the emulator refuses.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn switch(_save: *mut usize, _to: usize) {
    panic!("oxide: the CPU emulator (OXIDE_EMULATE) runs on x86-64 hosts only")
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static MAIN: Cell<usize> = const { Cell::new(0) };
        static FIBER: Cell<usize> = const { Cell::new(0) };
        static LOG: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    extern "C" fn body() -> ! {
        let n = 4u32;
        for step in 0..3 {
            LOG.with(|l| l.borrow_mut().push(n * 10 + step));
            let (save, to) = (FIBER.with(|f| f.as_ptr()), MAIN.with(Cell::get));
            // SAFETY: the main context is suspended in `switch` below.
            unsafe { switch(save, to) };
        }
        let to = MAIN.with(Cell::get);
        let mut dead = 0usize;
        // SAFETY: as above; this fiber is never resumed.
        unsafe { switch(&mut dead, to) };
        unreachable!()
    }

    #[test]
    fn fibers_switch_back_and_forth_and_keep_floats() {
        let stack = Stack::new().unwrap();
        FIBER.with(|f| f.set(prepare(&stack, body)));
        let x = std::hint::black_box(1.5f64);
        for _ in 0..4 {
            let (save, to) = (MAIN.with(|m| m.as_ptr()), FIBER.with(Cell::get));
            // SAFETY: the fiber is prepared or suspended; its stack is mapped.
            unsafe { switch(save, to) };
            LOG.with(|l| l.borrow_mut().push(0));
        }
        assert_eq!(x * 2.0, 3.0);
        assert_eq!(LOG.with(|l| l.borrow().clone()), [40, 0, 41, 0, 42, 0, 0]);
    }
}
