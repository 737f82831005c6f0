//! Structs, tuples, arrays and aggregates nested in each other: construction,
//! field access, methods, destructuring, copies, comparison, and the layouts
//! rustc picks for them (which the device must read the same way).

use crate::compare::Compare::Exact;
use crate::encode::{lanes, wide};
use crate::harness::Suite;

/// A plain struct with methods.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Point {
    x: i32,
    y: i32,
}

impl Point {
    fn from_bits(bits: u64) -> Point {
        Point {
            x: bits as i32,
            y: (bits >> 32) as i32,
        }
    }

    /// A quarter turn counter-clockwise.
    fn rotated(self) -> Point {
        Point {
            x: self.y.wrapping_neg(),
            y: self.x,
        }
    }

    fn manhattan(self, other: Point) -> u32 {
        self.x
            .abs_diff(other.x)
            .wrapping_add(self.y.abs_diff(other.y))
    }
}

/// Fields of mixed sizes, so that rustc reorders them: the device must use
/// the same layout, since the closure captures and results cross as bytes.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Mixed {
    flag: bool,
    wide: u64,
    small: u8,
    half: f32,
    pair: (u16, i8),
}

/// Aggregates inside aggregates.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Scene {
    corners: [Point; 4],
    tag: (u8, Mixed),
    weights: [[u16; 3]; 2],
}

impl Scene {
    fn build(a: u64, b: u64) -> Scene {
        let p = Point::from_bits(a);
        let q = Point::from_bits(b);
        Scene {
            corners: [p, q, p.rotated(), q.rotated().rotated()],
            tag: (
                a as u8,
                Mixed {
                    flag: a & 1 == 1,
                    wide: b,
                    small: (b >> 8) as u8,
                    half: a as f32,
                    pair: (b as u16, a as i8),
                },
            ),
            weights: [
                [a as u16, (a >> 16) as u16, (a >> 32) as u16],
                [b as u16, (b >> 16) as u16, (b >> 48) as u16],
            ],
        }
    }

    fn perimeter(&self) -> u32 {
        let c = &self.corners;
        (0..4).fold(0u32, |sum, i| {
            sum.wrapping_add(c[i].manhattan(c[(i + 1) % 4]))
        })
    }

    fn weight_total(&self) -> u32 {
        self.weights
            .iter()
            .flatten()
            .fold(0u32, |sum, &w| sum.wrapping_add(w as u32))
    }
}

pub fn run(s: &mut Suite) {
    s.case("agg/struct_methods", Exact, |a, b| {
        let (p, q) = (Point::from_bits(a), Point::from_bits(b));
        let r = p.rotated();
        lanes([
            p.manhattan(q),
            r.x as u32,
            r.y as u32,
            (r.rotated().rotated().rotated() == p) as u32,
        ])
    });
    s.case("agg/tuples", Exact, |a, b| {
        let t = ((a as u8, b as u16), (a as i32, b as i64), ());
        let ((x, y), (z, w), ()) = t;
        let swapped = ((w, z), (y, x));
        let ((w2, _), (_, x2)) = swapped;
        lanes([w2 as u64 ^ x2 as u64, (y as u64) << 16 | x as u64]) ^ (z as u32 as u128) << 32
    });
    s.case("agg/mixed_layout", Exact, |a, b| {
        let m = Scene::build(a, b).tag.1;
        let mut n = m;
        n.pair.1 = n.pair.1.wrapping_add(1);
        n.wide ^= a;
        let fields =
            lanes([m.flag as u64, m.wide, m.small as u64]) ^ (m.half.to_bits() as u128) << 96;
        fields
            ^ lanes([
                (m == n) as u64,
                n.pair.0 as u64 | (n.pair.1 as u8 as u64) << 16,
            ])
    });
    s.case("agg/nested_scene", Exact, |a, b| {
        let scene = Scene::build(a, b);
        let mut copy = scene;
        copy.corners[2].x = copy.corners[2].x.wrapping_add(1);
        copy.weights[1][2] ^= 0x8000;
        lanes([
            scene.perimeter(),
            scene.weight_total(),
            copy.weight_total(),
            (copy == scene) as u32,
        ])
    });
    s.case("agg/array_by_value", Exact, |a, b| {
        let bytes = a.to_le_bytes();
        let mut reversed = bytes;
        reversed.reverse();
        let mut grid = [[0u8; 4]; 4];
        for (i, row) in grid.iter_mut().enumerate() {
            for (j, cell) in row.iter_mut().enumerate() {
                *cell = bytes[(i + j) % 8] ^ (b >> (8 * i)) as u8;
            }
        }
        let diagonal = [grid[0][0], grid[1][1], grid[2][2], grid[3][3]];
        wide(
            u64::from_le_bytes(reversed),
            u32::from_le_bytes(diagonal) as u64,
        )
    });
}
