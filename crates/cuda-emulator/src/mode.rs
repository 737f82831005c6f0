//! The two emulation modes and how `OXIDE_EMULATE` selects them.

use std::fmt;

/// The environment variable that selects the emulator and its mode.
pub const ENV: &str = "OXIDE_EMULATE";

/// What an emulated launch executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The kernel's own Rust code, compiled for the host (`OXIDE_EMULATE=host`):
    /// fast, and debuggable with gdb; it proves the Rust, not what oxide's
    /// device linker made of it.
    HostCode,
    /// The PTX the device linker produced, run by the `ptx-vm` virtual
    /// machine (`OXIDE_EMULATE=ptx`, and `1`): it proves oxide's output (the
    /// device linker's passes and LLVM's NVPTX backend), though not ptxas
    /// or the hardware.
    DeviceCode,
}

impl Mode {
    /// The mode `OXIDE_EMULATE=1` selects (and `cargo oxide run` without a
    /// GPU): device code, which proves more than host code.
    pub const DEFAULT: Mode = Mode::DeviceCode;

    /// The mode a value of [`ENV`] selects: `None` for the GPU (unset, empty,
    /// `0`, `false`, `no`, `off`), [`Mode::DEFAULT`] for `1`, `true`, `yes`,
    /// `on`; `host`; `ptx` (or `device`). Anything else is an error.
    pub fn parse(value: &str) -> Result<Option<Mode>, ModeError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "0" | "false" | "no" | "off" => Ok(None),
            "1" | "true" | "yes" | "on" => Ok(Some(Mode::DEFAULT)),
            "host" => Ok(Some(Mode::HostCode)),
            "ptx" | "device" => Ok(Some(Mode::DeviceCode)),
            _ => Err(ModeError { value: value.to_string() }),
        }
    }

    /// The mode this process's environment selects (see [`parse`](Self::parse)).
    pub fn from_env() -> Result<Option<Mode>, ModeError> {
        match std::env::var(ENV) {
            Ok(v) => Mode::parse(&v),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(v)) => Err(ModeError { value: v.to_string_lossy().into_owned() }),
        }
    }

    /// The value of [`ENV`] that selects this mode.
    pub fn env_value(self) -> &'static str {
        match self {
            Mode::HostCode => "host",
            Mode::DeviceCode => "ptx",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::HostCode => "host code",
            Mode::DeviceCode => "device code (PTX)",
        })
    }
}

/// A value of [`ENV`] that names no mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeError {
    /// The value found.
    pub value: String,
}

impl fmt::Display for ModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{ENV}={:?} selects no emulation mode: use `host` (the kernels' Rust code on the CPU), `ptx` (the \
             device linker's PTX on the CPU), `1` (the default mode, {}), or `0` (the GPU)",
            self.value,
            Mode::DEFAULT
        )
    }
}

impl std::error::Error for ModeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_select_modes() {
        for v in ["", "0", "false", "No", " off "] {
            assert_eq!(Mode::parse(v), Ok(None), "{v:?}");
        }
        for v in ["1", "true", "YES", "on"] {
            assert_eq!(Mode::parse(v), Ok(Some(Mode::DEFAULT)), "{v:?}");
        }
        assert_eq!(Mode::parse("host"), Ok(Some(Mode::HostCode)));
        assert_eq!(Mode::parse("ptx"), Ok(Some(Mode::DeviceCode)));
        assert_eq!(Mode::parse("device"), Ok(Some(Mode::DeviceCode)));
        for m in [Mode::HostCode, Mode::DeviceCode] {
            assert_eq!(Mode::parse(m.env_value()), Ok(Some(m)));
        }
        let e = Mode::parse("2").unwrap_err();
        assert_eq!(e.value, "2");
        let text = e.to_string();
        assert!(text.starts_with("OXIDE_EMULATE=\"2\" selects no emulation mode: use `host`"), "{text}");
    }
}
