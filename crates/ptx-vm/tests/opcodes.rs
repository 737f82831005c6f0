//! The VM's list of PTX instruction names (`ptx_vm::opcodes`) against the
//! CUDA toolkit's ptxas: every name on the list is one ptxas knows, and a
//! name ptxas does not know is not on it. Skips, saying so, where ptxas is
//! not installed.

mod common;

use common::ptxas;
use std::process::Command;

/// An instruction beginning with `name` that ptxas reads as that
/// instruction: the bare name where ptxas knows it so, else enough of its
/// modifiers to make one (ptxas's names of `cp.async`, `wgmma.fence`, …
/// include them). Operands do not matter: ptxas names an unknown
/// instruction before it checks any operand.
fn sample(name: &str) -> String {
    let full = match name {
        "applypriority" => "applypriority.global.L2::evict_normal",
        "brx" => "brx.idx",
        "clusterlaunchcontrol" => "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128",
        "cp" => "cp.async.commit_group",
        "createpolicy" => "createpolicy.fractional.L2::evict_last.b64",
        "discard" => "discard.global.L2",
        "elect" => "elect.sync",
        "griddepcontrol" => "griddepcontrol.wait",
        "ldmatrix" => "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
        "mad24" | "madc" | "mul24" => return format!("{name}.lo"),
        "match" => "match.any.sync.b32",
        "mbarrier" => "mbarrier.init.b64",
        "mma" => "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "movmatrix" => "movmatrix.sync.aligned.m8n8.trans.b16",
        "multimem" => "multimem.ld_reduce.relaxed.sys.global.add.u32",
        "redux" => "redux.sync.add.u32",
        "setmaxnreg" => "setmaxnreg.inc.sync.aligned.u32",
        "shf" => "shf.l.wrap.b32",
        "shfl" => "shfl.sync.idx.b32",
        "stmatrix" => "stmatrix.sync.aligned.m8n8.x1.shared.b16",
        "suld" | "sured" | "sust" => return format!("{name}.b"),
        "tcgen05" => "tcgen05.fence::before_thread_sync",
        "tensormap" => "tensormap.replace.tile.global_address.global.b1024.b64",
        "vote" => "vote.sync.all.pred",
        "wgmma" => "wgmma.fence.sync.aligned",
        "wmma" => "wmma.load.a.sync.aligned.row.m16n16k16.f16",
        _ => name,
    };
    full.to_string()
}

/// ptxas's first message for a module whose one kernel holds `instruction;`.
fn ptxas_says(ptxas: &std::path::Path, dir: &std::path::Path, instruction: &str) -> String {
    let file = dir.join("k.ptx");
    let ptx = format!(".version 8.8\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{{\n{instruction};\nret;\n}}\n");
    std::fs::write(&file, ptx).unwrap();
    let out = Command::new(ptxas).args(["-arch=sm_100a", "-o"]).arg(dir.join("k.cubin")).arg(&file).output().expect("ptxas runs");
    String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
}

#[test]
fn every_listed_name_is_an_instruction_ptxas_knows() {
    let Some(ptxas) = ptxas() else {
        eprintln!("SKIPPED every_listed_name_is_an_instruction_ptxas_knows: no ptxas in $OXIDE_CUDA_PATH, $CUDA_PATH or /usr/local/cuda");
        return;
    };
    let dir = std::env::temp_dir().join(format!("ptx-vm-opcodes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    const UNKNOWN: &str = "Not a name of any known instruction";
    // The oracle itself: ptxas says so of a made-up name.
    for made_up in ["bogus", "yield", "nop"] {
        assert!(ptxas_says(&ptxas, &dir, made_up).contains(UNKNOWN), "ptxas no longer words an unknown name as expected");
        assert!(!ptx_vm::opcodes::is_instruction(made_up), "{made_up}");
    }
    let unknown: Vec<String> = ptx_vm::opcodes::instructions()
        .iter()
        .map(|name| sample(name))
        .filter(|instruction| ptxas_says(&ptxas, &dir, instruction).contains(UNKNOWN))
        .collect();
    std::fs::remove_dir_all(&dir).ok();
    assert!(unknown.is_empty(), "ptxas knows no instruction {unknown:?}");
}
