//! Peer access between GPUs: [`CudaContext::can_access_peer`],
//! [`CudaContext::enable_peer_access`] (kernels of one context then read
//! and write the other's memory directly, over NVLink or PCIe) and
//! [`DeviceBuffer::copy_from_peer`], a device-to-device copy between the
//! buffers of two contexts (`cuMemcpyPeerAsync`; it works without peer
//! access too, staged by the driver, only slower).
//!
//! A peer copy is ordered like every copy of this crate, on both sides: it
//! runs on a stream of the destination's context after the source's last
//! write on any stream (of its own context or not), and the source's next
//! write, and the destination's next use, wait for the copy.
//!
//! On a single GPU (and on the CPU emulator, which has one device) no peer
//! exists: `can_access_peer` answers `false` and `enable_peer_access`
//! fails with [`PeerError::SameDevice`] or [`PeerError::Unsupported`].

use std::ffi::c_int;
use std::fmt;

use crate::context::{CudaContext, CudaStream};
use crate::driver::{cu, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED};
use crate::error::DriverError;
use crate::memory::{DeviceBuffer, DeviceRepr};

/// Why a peer-access call or a peer copy failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerError {
    /// Both contexts are on the same device: a device is not its own peer
    /// (its memory is reachable without peer access).
    SameDevice {
        /// The device's ordinal.
        device: usize,
    },
    /// The devices cannot reach each other's memory (no NVLink or PCIe
    /// peer path, or different kinds of GPU).
    Unsupported {
        /// The device that asked.
        device: usize,
        /// The device whose memory it asked for.
        peer: usize,
    },
    /// Peer access to be disabled was never enabled.
    NotEnabled {
        /// The device that asked.
        device: usize,
        /// The peer.
        peer: usize,
    },
    /// Source and destination of a copy differ in length.
    LengthMismatch {
        /// Elements of the destination.
        destination: usize,
        /// Elements of the source.
        source: usize,
        /// The element type.
        element: &'static str,
    },
    /// The stream of a peer copy is not of the destination's context.
    WrongStream {
        /// The device of the stream.
        stream_device: usize,
        /// The device of the destination buffer.
        destination_device: usize,
    },
    /// The driver refused the call.
    Driver(DriverError),
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerError::SameDevice { device } => write!(
                f,
                "both contexts are on device {device}: a device is not its own peer, and its memory needs no peer \
                 access (use a context of another GPU)"
            ),
            PeerError::Unsupported { device, peer } => write!(
                f,
                "device {device} cannot access the memory of device {peer} directly (no peer path between them; \
                 `nvidia-smi topo -m` shows the links); copies between them still work through \
                 DeviceBuffer::copy_from_peer, staged by the driver"
            ),
            PeerError::NotEnabled { device, peer } => {
                write!(f, "peer access from device {device} to device {peer} was not enabled, so it cannot be disabled")
            }
            PeerError::LengthMismatch { destination, source, element } => write!(
                f,
                "length mismatch: the destination holds {destination} elements of {element} but the source {source}; \
                 copy between buffers (or slices) of the same length"
            ),
            PeerError::WrongStream { stream_device, destination_device } => write!(
                f,
                "the stream belongs to device {stream_device} but the destination buffer to device \
                 {destination_device}: queue a peer copy on a stream of the destination's context"
            ),
            PeerError::Driver(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PeerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PeerError::Driver(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DriverError> for PeerError {
    fn from(e: DriverError) -> Self {
        PeerError::Driver(e)
    }
}

impl CudaContext {
    /// Whether this context's device can access the memory of `peer`'s
    /// device directly (`cuDeviceCanAccessPeer`). `false` for two contexts
    /// of the same device.
    pub fn can_access_peer(&self, peer: &CudaContext) -> Result<bool, DriverError> {
        if self.cu_device() == peer.cu_device() {
            return Ok(false);
        }
        let d = crate::driver::initialized()?;
        let mut can: c_int = 0;
        // SAFETY: out-pointer to a local; both are device handles of this driver.
        unsafe { cu!(d, cuDeviceCanAccessPeer(&mut can, self.cu_device(), peer.cu_device())) }?;
        Ok(can == 1)
    }

    /// Lets this context's kernels access `peer`'s memory directly
    /// (`cuCtxEnablePeerAccess`; one direction: enable it on `peer` too for
    /// the other). Enabling it again is not an error. Two contexts of one
    /// device are refused ([`PeerError::SameDevice`]), as are devices with
    /// no peer path ([`PeerError::Unsupported`]).
    ///
    /// ```no_run
    /// use cuda_core::{CudaContext, DeviceBuffer, PeerError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (gpu0, gpu1) = (CudaContext::new(0)?, CudaContext::new(1)?);
    /// if gpu1.can_access_peer(&gpu0)? {
    ///     gpu1.enable_peer_access(&gpu0)?; // gpu1's kernels may read gpu0's buffers
    /// }
    /// let (s0, s1) = (gpu0.new_stream()?, gpu1.new_stream()?);
    /// let src = DeviceBuffer::from_host(&s0, &[1u32, 2, 3])?;
    /// let mut dst = DeviceBuffer::<u32>::zeroed(&s1, 3)?;
    /// dst.copy_from_peer(&s1, &src)?; // waits for the upload on s0
    /// assert_eq!(dst.to_host_vec(&s1)?, [1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn enable_peer_access(&self, peer: &CudaContext) -> Result<(), PeerError> {
        let (device, peer_device) = (self.ordinal(), peer.ordinal());
        if self.cu_device() == peer.cu_device() {
            return Err(PeerError::SameDevice { device });
        }
        if !self.can_access_peer(peer)? {
            return Err(PeerError::Unsupported { device, peer: peer_device });
        }
        let d = self.bind()?;
        // SAFETY: this context is current; `peer` is a live context.
        match unsafe { cu!(d, cuCtxEnablePeerAccess(peer.raw(), 0)) } {
            Ok(()) => Ok(()),
            Err(e) if e.code() == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            Err(e) if e.code() == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => {
                Err(PeerError::Unsupported { device, peer: peer_device })
            }
            Err(e) => Err(PeerError::Driver(self.explain(e))),
        }
    }

    /// Withdraws what [`enable_peer_access`](Self::enable_peer_access) gave
    /// (`cuCtxDisablePeerAccess`).
    pub fn disable_peer_access(&self, peer: &CudaContext) -> Result<(), PeerError> {
        let (device, peer_device) = (self.ordinal(), peer.ordinal());
        if self.cu_device() == peer.cu_device() {
            return Err(PeerError::SameDevice { device });
        }
        let d = self.bind()?;
        // SAFETY: this context is current; `peer` is a live context.
        match unsafe { cu!(d, cuCtxDisablePeerAccess(peer.raw())) } {
            Ok(()) => Ok(()),
            Err(e) if e.code() == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED => {
                Err(PeerError::NotEnabled { device, peer: peer_device })
            }
            Err(e) => Err(PeerError::Driver(self.explain(e))),
        }
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Overwrites this buffer with `src`, a buffer of the same length on
    /// any device (`cuMemcpyPeerAsync`; a plain device copy when both are of
    /// one context). Queued on `stream`, which must be of this buffer's
    /// context; ordered after `src`'s last write on any stream, and `src`'s
    /// next write waits for it. Peer access need not be enabled (the driver
    /// then stages the copy).
    pub fn copy_from_peer(&mut self, stream: &CudaStream, src: &DeviceBuffer<T>) -> Result<(), PeerError> {
        if self.len() != src.len() {
            return Err(PeerError::LengthMismatch {
                destination: self.len(),
                source: src.len(),
                element: std::any::type_name::<T>(),
            });
        }
        if !self.context().same(stream.context()) {
            return Err(PeerError::WrongStream {
                stream_device: stream.context().ordinal(),
                destination_device: self.context().ordinal(),
            });
        }
        self.as_slice_mut().copy_from_device(stream, src.as_slice())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_to_do() {
        let e = PeerError::SameDevice { device: 0 }.to_string();
        assert!(e.contains("device 0") && e.contains("another GPU"), "{e}");
        let e = PeerError::Unsupported { device: 0, peer: 1 }.to_string();
        assert!(e.contains("device 0 cannot access the memory of device 1") && e.contains("copy_from_peer"), "{e}");
        let e = PeerError::LengthMismatch { destination: 4, source: 3, element: "u32" }.to_string();
        assert!(e.contains("4 elements of u32 but the source 3"), "{e}");
        let e = PeerError::WrongStream { stream_device: 1, destination_device: 0 }.to_string();
        assert!(e.contains("stream of the destination's context"), "{e}");
    }
}
