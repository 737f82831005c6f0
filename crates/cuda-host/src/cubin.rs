//! What a GPU would refuse that the CPU emulator would not notice: the
//! largest block a kernel's registers allow.
//!
//! On a GPU, a kernel's register count (ptxas's, recorded in the cubin)
//! limits its block: every warp of a block gets its registers at once from
//! the register file of one multiprocessor partition, so a kernel of 96
//! registers runs at most 640 threads a block on an H200, and a launch of
//! 1,024 fails. The emulator models no registers; without this check a
//! program whose emulated runs all pass could be refused on the GPU (the
//! random block programs of tests/fuzz were, until they wrote launch
//! bounds). The emulated launch path reads the count from the cubin the
//! device linker embedded beside the PTX and applies the same limit.
//!
//! The cubin is an ELF64 file; its `.nv.info` section is a list of
//! attributes `[format u8][attribute u8][size u16][value]`, among them one
//! register count per function (`EIATTR_REGCOUNT`: the function's symbol
//! index and its count, two u32).

/// `EIATTR_REGCOUNT`: a function's register count (symbol index, count).
const ATTRIBUTE_REGISTER_COUNT: u8 = 0x2f;
/// `EIFMT_SVAL`: an attribute whose value follows its u16 size.
const FORMAT_SIZED_VALUE: u8 = 4;

/// Registers in one of a multiprocessor's four partitions (64 Ki in all on
/// every architecture oxide targets, sm_70 and newer).
const PARTITION_REGISTERS: u32 = 16 * 1024;
/// Partitions per multiprocessor: a block's warps are spread over them.
const PARTITIONS: u32 = 4;
/// A warp's registers are allocated in units of this many.
const WARP_ALLOCATION_UNIT: u32 = 256;

/// The largest block a kernel of `registers` registers per thread can
/// launch: as many warps as each partition's register file holds, on every
/// partition, at most 1,024 threads.
pub(crate) fn max_threads_for_registers(registers: u32) -> u32 {
    let per_warp = (registers.max(1) * 32).div_ceil(WARP_ALLOCATION_UNIT) * WARP_ALLOCATION_UNIT;
    (PARTITIONS * (PARTITION_REGISTERS / per_warp) * 32).min(1024)
}

/// The register count ptxas gave function `name` in `cubin`, if the cubin
/// is an ELF64 file that records one for it.
pub(crate) fn register_count(cubin: &[u8], name: &str) -> Option<u32> {
    let elf = Elf::parse(cubin)?;
    let symbols = elf.section(".symtab")?;
    let strings = elf.section(".strtab")?;
    let info = elf.section(".nv.info")?;
    let mut at = 0;
    while at + 4 <= info.len() {
        let (format, attribute) = (info[at], info[at + 1]);
        if format != FORMAT_SIZED_VALUE {
            at += 4; // a value of its own two bytes, or none
            continue;
        }
        let size = u16_at(info, at + 2)? as usize;
        let value = info.get(at + 4..at + 4 + size)?;
        if attribute == ATTRIBUTE_REGISTER_COUNT && size == 8 {
            let symbol = u32_at(value, 0)? as usize;
            // An Elf64_Sym: st_name (u32) first, 24 bytes each.
            let name_at = u32_at(symbols, symbol.checked_mul(24)?)? as usize;
            if c_str_at(strings, name_at)? == name.as_bytes() {
                return u32_at(value, 4);
            }
        }
        at += 4 + size;
    }
    None
}

/// The sections of an ELF64 little-endian file, by name.
struct Elf<'a> {
    bytes: &'a [u8],
    /// (name offset, file offset, size) of each section.
    sections: Vec<(u32, usize, usize)>,
    names: &'a [u8],
}

impl<'a> Elf<'a> {
    fn parse(bytes: &'a [u8]) -> Option<Elf<'a>> {
        if bytes.get(..6)? != b"\x7fELF\x02\x01" {
            return None;
        }
        let table = u64_at(bytes, 0x28)? as usize;
        let entry = u16_at(bytes, 0x3a)? as usize;
        let count = u16_at(bytes, 0x3c)? as usize;
        let names_index = u16_at(bytes, 0x3e)? as usize;
        if entry < 0x40 {
            return None;
        }
        let mut sections = Vec::with_capacity(count);
        for k in 0..count {
            let header = bytes.get(table.checked_add(k.checked_mul(entry)?)?..)?;
            sections.push((u32_at(header, 0)?, u64_at(header, 0x18)? as usize, u64_at(header, 0x20)? as usize));
        }
        let &(_, names_at, names_len) = sections.get(names_index)?;
        let names = bytes.get(names_at..names_at.checked_add(names_len)?)?;
        Some(Elf { bytes, sections, names })
    }

    /// The contents of the first section called `name`.
    fn section(&self, name: &str) -> Option<&'a [u8]> {
        let &(_, at, len) = self.sections.iter().find(|(n, _, _)| c_str_at(self.names, *n as usize) == Some(name.as_bytes()))?;
        self.bytes.get(at..at.checked_add(len)?)
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// The NUL-terminated string at `at` (without its NUL).
fn c_str_at(b: &[u8], at: usize) -> Option<&[u8]> {
    let rest = b.get(at..)?;
    Some(&rest[..rest.iter().position(|&c| c == 0)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_limit_follows_the_registers_as_on_the_h200() {
        // Measured on the H200: the driver refused 1,024-thread blocks of
        // kernels it limited to 640, 768 and 896 threads; ptxas's 96-register
        // kernel is the first.
        assert_eq!(max_threads_for_registers(96), 640);
        assert_eq!(max_threads_for_registers(80), 768);
        assert_eq!(max_threads_for_registers(72), 896);
        // The CUDA occupancy rules: 64 registers allow 1,024, 128 allow 512,
        // 255 allow 256; a warp's registers come in units of 256.
        assert_eq!(max_threads_for_registers(64), 1024);
        assert_eq!(max_threads_for_registers(65), 896);
        assert_eq!(max_threads_for_registers(128), 512);
        assert_eq!(max_threads_for_registers(255), 256);
        assert_eq!(max_threads_for_registers(1), 1024);
        assert_eq!(max_threads_for_registers(0), 1024);
    }

    #[test]
    fn bad_cubins_give_no_count() {
        assert_eq!(register_count(b"", "k"), None);
        assert_eq!(register_count(b"\x7fELF\x01\x01\0\0", "k"), None, "ELF32");
        let mut header = vec![0u8; 64];
        header[..6].copy_from_slice(b"\x7fELF\x02\x01");
        header[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        header[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        header[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        assert_eq!(register_count(&header, "k"), None, "section table out of the file");
    }

    /// The CUDA toolkit's ptxas, found where the device linker looks
    /// (`$OXIDE_CUDA_PATH`, `$CUDA_PATH`, /usr/local/cuda), as
    /// crates/oxide-tables/tests/stubs_assemble.rs does.
    fn ptxas() -> Option<std::path::PathBuf> {
        ["OXIDE_CUDA_PATH", "CUDA_PATH"]
            .iter()
            .filter_map(|v| std::env::var_os(v).map(std::path::PathBuf::from))
            .chain([std::path::PathBuf::from("/usr/local/cuda")])
            .map(|dir| dir.join("bin/ptxas"))
            .find(|p| p.is_file())
    }

    /// The counts ptxas prints with `-v` are the counts read from its cubin
    /// (skipped, saying so, where the CUDA toolkit's ptxas is not installed).
    #[test]
    fn register_counts_read_from_a_cubin_match_ptxas() {
        let Some(ptxas) = ptxas() else {
            eprintln!("SKIPPED register_counts_read_from_a_cubin_match_ptxas: no ptxas in $OXIDE_CUDA_PATH, $CUDA_PATH or /usr/local/cuda");
            return;
        };
        let dir = std::env::temp_dir().join(format!("cuda-host-cubin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // One kernel with many values live at once (each of 96 loads is
        // stored scaled by the sum of all of them), one with almost none.
        let mut wide = String::from("mov.f32 %s, 0f00000000;\n");
        for k in 0..24 {
            wide += &format!("ld.global.v4.f32 {{%f{}, %f{}, %f{}, %f{}}}, [%rd1+{}];\n", 4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3, 16 * k);
        }
        for k in 0..96 {
            wide += &format!("add.f32 %s, %s, %f{k};\n");
        }
        for k in 0..96 {
            wide += &format!("mul.f32 %f{k}, %f{k}, %s;\n");
        }
        for k in 0..24 {
            wide += &format!("st.global.v4.f32 [%rd1+{}], {{%f{}, %f{}, %f{}, %f{}}};\n", 4096 + 16 * k, 4 * k + 3, 4 * k + 2, 4 * k + 1, 4 * k);
        }
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .visible .entry wide(.param .u64 p) {{\n.reg .f32 %f<100>;\n.reg .f32 %s;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [p];\n{wide}ret;\n}}\n\
             .visible .entry narrow(.param .u64 p) {{\nret;\n}}\n"
        );
        let (source, cubin) = (dir.join("k.ptx"), dir.join("k.cubin"));
        std::fs::write(&source, ptx).unwrap();
        let out = std::process::Command::new(&ptxas).args(["-arch=sm_90", "-v", "-o"]).arg(&cubin).arg(&source).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // "Compiling entry function 'wide'" … "Used N registers".
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        let printed = |name: &str| -> u32 {
            let from = log.find(&format!("entry function '{name}'")).unwrap();
            let used = &log[from..][log[from..].find("Used ").unwrap() + 5..];
            used[..used.find(' ').unwrap()].parse().unwrap()
        };
        let bytes = std::fs::read(&cubin).unwrap();
        let (wide, narrow) = (printed("wide"), printed("narrow"));
        assert!(wide > 64, "the wide kernel has {wide} registers; the test needs more than 64");
        assert_eq!(register_count(&bytes, "wide"), Some(wide));
        assert_eq!(register_count(&bytes, "narrow"), Some(narrow));
        assert_eq!(register_count(&bytes, "absent"), None);
        assert!(max_threads_for_registers(wide) < 1024);
        std::fs::remove_dir_all(&dir).ok();
    }
}
