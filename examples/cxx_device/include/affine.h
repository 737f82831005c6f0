// The layout main.rs's #[repr(C)] Affine mirrors. A header found through
// `--oxide-nvcc-flag=-Iinclude` (build.rs), as a vendor library's would be.
#pragma once

struct Affine {
    float scale;
    float shift;
};
