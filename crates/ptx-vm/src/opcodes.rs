//! The names PTX gives its instructions, as the parser splits them: the part
//! before the first dot (`cp` of `cp.async.bulk.tensor`, `mul24` of
//! `mul24.lo`).
//!
//! The driver's JIT refuses a whole module when one instruction's name is
//! not PTX, whichever kernel holds it; the VM decodes an instruction it does
//! not implement into a launch-time refusal instead, so that a module using
//! a valid instruction the VM lacks still runs its other kernels. Telling
//! the two apart needs this list: a name outside it fails the module's load
//! as on the GPU (a typo in `ptx_asm!` loads nowhere), a name inside it that
//! the decoder does not know stays a refusal of the kernels that reach it.
//!
//! The list follows the PTX ISA's instruction set (integer, floating-point,
//! half-precision, comparison, logic, data movement, texture and surface,
//! control flow, synchronisation, matrix and tensor-core, video and
//! miscellaneous instructions, through the sm_100 additions). A test checks
//! each entry against the CUDA toolkit's ptxas where it is installed.

/// Every instruction name PTX has, sorted (binary search).
const INSTRUCTIONS: &[&str] = &[
    "abs", "activemask", "add", "addc", "alloca", "and", "applypriority", "atom", "bar", "barrier",
    "bfe", "bfi", "bfind", "bmsk", "bra", "brev", "brkpt", "brx", "call", "clusterlaunchcontrol",
    "clz", "cnot", "copysign", "cos", "cp", "createpolicy", "cvt", "cvta", "discard", "div",
    "dp2a", "dp4a", "elect", "ex2", "exit", "fence", "fma", "fns", "getctarank", "griddepcontrol",
    "isspacep", "istypep", "ld", "ldmatrix", "ldu", "lg2", "lop3", "mad", "mad24", "madc", "mapa",
    "match", "max", "mbarrier", "membar", "min", "mma", "mov", "movmatrix", "mul", "mul24",
    "multimem", "nanosleep", "neg", "not", "or", "pmevent", "popc", "prefetch", "prefetchu",
    "prmt", "rcp", "red", "redux", "rem", "ret", "rsqrt", "sad", "selp", "set", "setmaxnreg",
    "setp", "shf", "shfl", "shl", "shr", "sin", "slct", "sqrt", "st", "stackrestore", "stacksave",
    "stmatrix", "sub", "subc", "suld", "suq", "sured", "sust", "szext", "tanh", "tcgen05",
    "tensormap", "testp", "tex", "tld4", "trap", "txq", "vabsdiff", "vabsdiff2", "vabsdiff4",
    "vadd", "vadd2", "vadd4", "vavrg2", "vavrg4", "vmad", "vmax", "vmax2", "vmax4", "vmin",
    "vmin2", "vmin4", "vote", "vset", "vset2", "vset4", "vshl", "vshr", "vsub", "vsub2", "vsub4",
    "wgmma", "wmma", "xor",
];

/// Whether `name` (an instruction's text before its first dot) names a PTX
/// instruction.
pub fn is_instruction(name: &str) -> bool {
    INSTRUCTIONS.binary_search(&name).is_ok()
}

/// Every name of the list, for tests that check it against ptxas.
#[doc(hidden)]
pub fn instructions() -> &'static [&'static str] {
    INSTRUCTIONS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_without_duplicates() {
        assert!(INSTRUCTIONS.windows(2).all(|w| w[0] < w[1]), "INSTRUCTIONS must stay sorted for the binary search");
    }

    #[test]
    fn names_are_told_apart() {
        for name in ["add", "cp", "wgmma", "tcgen05", "xor", "abs", "vsub4"] {
            assert!(is_instruction(name), "{name}");
        }
        for name in ["bogus", "yield", "", "ADD", "add.s32", "cp.async", "nop"] {
            assert!(!is_instruction(name), "{name}");
        }
    }
}
