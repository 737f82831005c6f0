//! Not an error: types a program derives DeviceRepr for and keeps in device
//! buffers: a repr(C) struct, a tuple struct, a generic struct, a union, and
//! an enum whose 256 variants are every byte value.
use cuda_core::{CudaContext, DeviceBuffer, DeviceRepr};

#[derive(Clone, Copy, DeviceRepr)]
#[repr(C)]
pub struct Particle {
    pub pos: [f32; 3],
    pub id: u32,
}

#[derive(Clone, Copy, DeviceRepr)]
pub struct Meters(pub f64);

#[derive(Clone, Copy, DeviceRepr)]
pub struct Pair<T: Copy + 'static> {
    pub a: T,
    pub b: T,
}

#[derive(Clone, Copy, DeviceRepr)]
#[repr(C)]
pub union Bits {
    pub f: f32,
    pub u: u32,
}

macro_rules! every_byte {
    ($($v:ident)*) => {
        #[derive(Clone, Copy, DeviceRepr)]
        #[repr(u8)]
        #[allow(dead_code)]
        pub enum Byte { $($v),* }
    };
}
every_byte!(
    B00 B01 B02 B03 B04 B05 B06 B07 B08 B09 B0a B0b B0c B0d B0e B0f B10 B11 B12 B13 B14 B15 B16 B17 B18 B19 B1a B1b B1c B1d B1e B1f
    B20 B21 B22 B23 B24 B25 B26 B27 B28 B29 B2a B2b B2c B2d B2e B2f B30 B31 B32 B33 B34 B35 B36 B37 B38 B39 B3a B3b B3c B3d B3e B3f
    B40 B41 B42 B43 B44 B45 B46 B47 B48 B49 B4a B4b B4c B4d B4e B4f B50 B51 B52 B53 B54 B55 B56 B57 B58 B59 B5a B5b B5c B5d B5e B5f
    B60 B61 B62 B63 B64 B65 B66 B67 B68 B69 B6a B6b B6c B6d B6e B6f B70 B71 B72 B73 B74 B75 B76 B77 B78 B79 B7a B7b B7c B7d B7e B7f
    B80 B81 B82 B83 B84 B85 B86 B87 B88 B89 B8a B8b B8c B8d B8e B8f B90 B91 B92 B93 B94 B95 B96 B97 B98 B99 B9a B9b B9c B9d B9e B9f
    Ba0 Ba1 Ba2 Ba3 Ba4 Ba5 Ba6 Ba7 Ba8 Ba9 Baa Bab Bac Bad Bae Baf Bb0 Bb1 Bb2 Bb3 Bb4 Bb5 Bb6 Bb7 Bb8 Bb9 Bba Bbb Bbc Bbd Bbe Bbf
    Bc0 Bc1 Bc2 Bc3 Bc4 Bc5 Bc6 Bc7 Bc8 Bc9 Bca Bcb Bcc Bcd Bce Bcf Bd0 Bd1 Bd2 Bd3 Bd4 Bd5 Bd6 Bd7 Bd8 Bd9 Bda Bdb Bdc Bdd Bde Bdf
    Be0 Be1 Be2 Be3 Be4 Be5 Be6 Be7 Be8 Be9 Bea Beb Bec Bed Bee Bef Bf0 Bf1 Bf2 Bf3 Bf4 Bf5 Bf6 Bf7 Bf8 Bf9 Bfa Bfb Bfc Bfd Bfe Bff
);

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let _ = DeviceBuffer::<Particle>::zeroed(&stream, 4).unwrap();
    let _ = DeviceBuffer::<Meters>::zeroed(&stream, 4).unwrap();
    let _ = DeviceBuffer::<Pair<u16>>::zeroed(&stream, 4).unwrap();
    let _ = DeviceBuffer::<Bits>::zeroed(&stream, 4).unwrap();
    let _ = DeviceBuffer::<Byte>::zeroed(&stream, 4).unwrap();
}
