//! Shared memory per block, and the race detector over it.
//!
//! `SharedArray::as_mut_ptr` and `dynamic_shared` pass the static's address
//! through the `block_shared` stub, which maps it to the running block's own
//! copy ([`Region`]). Every `SharedArray::read/write` reports its access
//! through the `shared_access` stub: two threads touching one address in one
//! barrier epoch, one of them writing, race unless a `sync_warp` (or another
//! collective) of their common warp separates them; an access past the end
//! of its array is out of bounds. Either ends the thread with a report.

use std::collections::HashMap;

/// The last access to one shared-memory address in the current epoch.
#[derive(Clone, Copy, Default)]
struct Access {
    epoch: u64,
    writer: Option<(u32, u64)>,
    readers: [Option<(u32, u64)>; 2],
}

/// Hashes shared-memory addresses with one multiplication (SipHash, the
/// default, costs more than the rest of an access check).
#[derive(Clone, Copy, Default)]
struct BuildAddressHasher;

#[derive(Default)]
struct AddressHasher(u64);

impl std::hash::BuildHasher for BuildAddressHasher {
    type Hasher = AddressHasher;
    fn build_hasher(&self) -> AddressHasher {
        AddressHasher(0)
    }
}

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
}

/// Bytes after each shared region in which out-of-bounds accesses are caught.
const REGION_MARGIN: usize = 256;

/// One `shared!` array (or the dynamic area) of this block.
struct Region {
    key: usize,
    memory: Vec<u128>,
    size: usize,
}

impl Region {
    fn new(key: usize, size: usize) -> Region {
        // Shared memory starts uninitialised on the GPU; all-ones bytes make
        // a read before any write visible (NaN, -1) instead of a quiet zero.
        // A margin after the end turns an access just past it (the common
        // off-by-one) into a report instead of a write to another allocation.
        Region { key, memory: vec![u128::MAX; size.div_ceil(16) + REGION_MARGIN / 16], size }
    }
    fn start(&self) -> usize {
        self.memory.as_ptr() as usize
    }
}

/// The shared memory of one block and the accesses of the current epoch.
#[derive(Default)]
pub(super) struct SharedMemory {
    regions: Vec<Region>,
    dynamic: Option<Region>,
    accesses: HashMap<usize, Access, BuildAddressHasher>,
    /// Bumped when a barrier opens: accesses of different epochs never race.
    epoch: u64,
}

impl SharedMemory {
    /// A barrier opened: every later access is ordered after every earlier one.
    pub(super) fn next_epoch(&mut self) {
        self.epoch += 1;
    }
}

/// What an access through the SharedArray API did wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SharedFault {
    /// `size` bytes at byte `offset` of an array of `len` bytes.
    OutOfBounds { size: usize, offset: usize, len: usize },
    /// Thread `other` (linear index) `other_wrote` (else read) byte `offset`
    /// (at `address`) of an array of `len` bytes in this epoch, and the
    /// access conflicts with it.
    Race { other: u32, other_wrote: bool, offset: usize, address: usize, len: usize },
}

impl SharedMemory {
    /// The block's copy of the shared static at `key` (`size` bytes), or of
    /// the dynamic area (`dynamic_bytes` bytes) when given.
    pub(super) fn block_copy(&mut self, key: usize, size: usize, dynamic_bytes: Option<usize>) -> *mut u8 {
        if let Some(bytes) = dynamic_bytes {
            let region = self.dynamic.get_or_insert_with(|| Region::new(key, bytes));
            return region.memory.as_mut_ptr().cast();
        }
        if let Some(r) = self.regions.iter_mut().find(|r| r.key == key) {
            return r.memory.as_mut_ptr().cast();
        }
        self.regions.push(Region::new(key, size));
        self.regions.last_mut().expect("just pushed").memory.as_mut_ptr().cast()
    }

    /// Records an access of thread `me` (linear index), whose warp has
    /// completed `generation(me)` collectives; `generation` answers for any
    /// thread. Addresses outside every region are not shared memory and are
    /// not tracked.
    pub(super) fn access(
        &mut self,
        address: usize,
        size: usize,
        write: bool,
        me: u32,
        generation: impl Fn(u32) -> u64,
    ) -> Result<(), SharedFault> {
        let inside = self.regions.iter().chain(self.dynamic.as_ref()).find(|r| {
            address >= r.start() && address < r.start() + r.memory.len() * 16
        });
        let Some(region) = inside else { return Ok(()) };
        let (start, len) = (region.start(), region.size);
        if address + size > start + len {
            return Err(SharedFault::OutOfBounds { size, offset: address - start, len });
        }
        let my_gen = generation(me);
        let epoch = self.epoch;
        let entry = self.accesses.entry(address).or_default();
        if entry.epoch != epoch {
            *entry = Access { epoch, ..Access::default() };
        }
        // Another thread's access conflicts unless a sync_warp (or collective)
        // of a shared warp separates them.
        let conflict = |other: Option<(u32, u64)>| {
            other.filter(|&(t, g)| t != me && !(t / 32 == me / 32 && g != my_gen))
        };
        let (writer, readers) = (entry.writer, entry.readers);
        let clash = if write {
            conflict(writer).map(|w| (w.0, true)).or_else(|| {
                readers.iter().copied().find_map(|r| conflict(r)).map(|r| (r.0, false))
            })
        } else {
            conflict(writer).map(|w| (w.0, true))
        };
        if let Some((other, other_wrote)) = clash {
            return Err(SharedFault::Race { other, other_wrote, offset: address - start, address, len });
        }
        if write {
            entry.writer = Some((me, my_gen));
        } else if !entry.readers.iter().flatten().any(|r| r.0 == me) {
            if let Some(slot) = entry.readers.iter_mut().find(|r| r.is_none()) {
                *slot = Some((me, my_gen));
            } else {
                entry.readers[1] = Some((me, my_gen));
            }
        }
        Ok(())
    }
}

impl SharedFault {
    /// The report, for thread `me` of `block` that made the access
    /// (`write`); `coords` names a thread by its linear index.
    pub(super) fn describe(&self, me: u32, write: bool, block: &str, coords: impl Fn(u32) -> String) -> String {
        match *self {
            SharedFault::OutOfBounds { size, offset, len } => format!(
                "emulator: thread {} of block {block}: shared-memory access out of bounds: {size} bytes at byte \
                 {offset} of a {len}-byte shared array",
                coords(me)
            ),
            SharedFault::Race { other, other_wrote, offset, address, len } => format!(
                "emulator: shared-memory race in block {block}: thread {} {} byte {offset} of a {len}-byte shared \
                 array (address {address:#x}) and thread {} then {} it, with no sync_threads between them",
                coords(other),
                if other_wrote { "wrote" } else { "read" },
                coords(me),
                if write { "wrote" } else { "read" }
            ),
        }
    }
}
