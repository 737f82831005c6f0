//! Orders the uses of one device buffer across streams.
//!
//! Work on one stream runs in order, work on two streams does not: a kernel
//! queued on stream A that writes a buffer and a copy queued on stream B
//! that reads it may run in either order, or overlap, and the copy returns
//! old or half-written values without an error. Rust's borrows cannot see
//! this (the `&mut` a launch takes ends when the call returns, long before
//! the GPU runs the kernel), so every buffer keeps a [`StreamOrder`]: which
//! stream last wrote it, and which streams have read it since. Each read or
//! write queued through the safe API first makes its stream wait, with an
//! event, for the uses it conflicts with on other streams:
//!
//! * a read waits for the last write (readers do not wait for each other);
//! * a write waits for the last write and for every read since.
//!
//! Work on a single stream, the common case, records no event and waits for
//! nothing: a buffer used only on the stream it was allocated on keeps no
//! record at all (no lock, no allocation), and only the first use from
//! another stream pays for the record and one event per stream it must
//! wait for. The event is recorded on the earlier stream when the conflict
//! is found, not when the earlier work was queued; it then also
//! covers work queued after that, which waits longer than needed but never
//! too little. That is why the buffer holds the earlier streams' handles
//! (a [`StreamHandle`] outlives its [`CudaStream`] while a buffer needs it).
//!
//! A use queued on a stream that captures a graph (`graph.rs`) waits for
//! nothing (a capture cannot wait on work outside it): the buffer is noted
//! in the capture instead, which refuses a buffer of another context, and
//! the graph keeps a weak handle of the buffer's order. Each launch of the
//! graph then orders itself as a write of every buffer it uses, on the
//! stream it runs on, so that other streams' uses, and the buffer's own
//! free, wait for it; and a launch after one of them was dropped is refused.
//!
//! A capture's temporary (`temp_buffer.rs`, an allocation node of the
//! graph) is the exception: its memory is the graph's, so it is neither
//! noted nor ordered; a use of it is allowed only on the stream that
//! captures, during that capture (so its free node, recorded there, follows
//! every use), and refused everywhere else.
//!
//! A managed buffer (`managed.rs`) is also read and written by the host,
//! through slices that borrow it. Before the host reads it,
//! [`ManagedOrder::wait_on_host`] blocks until the last write queued on any
//! stream has finished; before the host writes it, until every queued use
//! has. A graph launch is not stopped by a borrow, so a managed buffer is
//! refused in a capture (it breaks the capture, naming the buffer): no
//! graph can touch it behind the host's back.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::context::{CudaContext, CudaStream, StreamHandle};
use crate::error::{DriverError, ErrorKind};
use crate::graph::CaptureRecord;

/// The order of a [`DeviceBuffer`](crate::DeviceBuffer): its home stream
/// (the one it was allocated on, and is freed on), and the record of the
/// streams whose queued work may still touch it, made on first need.
///
/// While every use has been queued on the home stream, outside captures,
/// the stream alone orders them (and the free after them), so nothing is
/// recorded: the record is made, as if the allocation were the last write
/// on the home stream, by the first use on another stream, the first use
/// in a capture, or a graph node that takes the buffer. From then on every
/// use goes through it. Allocating, using and dropping a buffer on one
/// stream therefore takes no lock and allocates nothing beyond the memory.
#[derive(Debug)]
pub(crate) struct StreamOrder {
    home: Arc<StreamHandle>,
    record: OnceLock<Arc<OrderShared>>,
    /// For a temporary (an allocation node of a graph): the capture whose
    /// work may use it, the one that allocated it, or, for an allocation
    /// node of a graph built node by node, the kernel node's capture under
    /// way (none between them). Such a buffer is used only by that work.
    temp_of: Option<Mutex<Weak<CaptureRecord>>>,
}

/// The streams whose queued work may still touch one buffer, shared with
/// the graphs that use the buffer (weakly: the buffer's drop ends it).
#[derive(Debug)]
pub(crate) struct OrderShared {
    uses: Mutex<Uses<Arc<StreamHandle>>>,
    /// The ordinal of the device of the buffer's context, and its handle.
    device: usize,
    ctx: usize,
}

/// What a capture that meets a managed buffer reports.
const MANAGED_IN_CAPTURE: &str = "a ManagedBuffer used while the stream captures a graph (a graph launch would \
    bypass the borrows that keep the host's slices of the buffer safe; use a DeviceBuffer in graphs)";

impl StreamOrder {
    /// The order of a buffer allocated on `home` (the allocation counts as
    /// a write there).
    pub(crate) fn new(home: &Arc<StreamHandle>) -> StreamOrder {
        StreamOrder { home: home.clone(), record: OnceLock::new(), temp_of: None }
    }

    /// The order of a temporary of `capture`, allocated on its capturing
    /// stream `home`. Its record is made at once, so that no use takes the
    /// one-stream path, which does not look at captures: every use goes
    /// through [`temp_use`](Self::temp_use).
    /// `capture` is `Weak::new()` for an allocation node of a graph built
    /// node by node, used only while [`allow_temp_in`](Self::allow_temp_in)
    /// names a capture.
    pub(crate) fn new_temp(home: &Arc<StreamHandle>, capture: Weak<CaptureRecord>) -> StreamOrder {
        let order = StreamOrder { home: home.clone(), record: OnceLock::new(), temp_of: Some(Mutex::new(capture)) };
        order.shared();
        order
    }

    /// Whether the buffer is no capture's temporary (one test: the common
    /// drop and use paths ask this first).
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        self.temp_of.is_none()
    }

    /// The capture whose temporary the buffer is, if it is a temporary
    /// (dead when no capture may use it now).
    pub(crate) fn temp_of(&self) -> Option<Weak<CaptureRecord>> {
        self.temp_of.as_ref().map(|c| c.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// For a temporary: lets the work of `capture` use it from now on (none
    /// with `None`).
    pub(crate) fn allow_temp_in(&self, capture: Option<&Arc<CaptureRecord>>) {
        if let Some(slot) = &self.temp_of {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = capture.map_or_else(Weak::new, Arc::downgrade);
        }
    }

    /// A use of a capture's temporary on `stream`: allowed only while that
    /// capture records on `stream`, which orders it between the
    /// allocation node and the free node (the graph owns the memory, so it
    /// is neither noted as a buffer the graph keeps nor ordered with other
    /// streams).
    #[cold]
    fn temp_use(capture: &Weak<CaptureRecord>, stream: &CudaStream) -> Result<(), DriverError> {
        match (capture.upgrade(), stream.handle().capture()) {
            (Some(of), Some(now)) if Arc::ptr_eq(&of, &now) => Ok(()),
            _ => Err(DriverError::new(
                ErrorKind::InvalidArgument,
                "a capture's temporary buffer (CudaStream::alloc_temp) was used outside that capture: its memory \
                 exists only inside the graph's launches, between its allocation node and its free node; use it \
                 on the capturing stream while the capture records, or allocate a DeviceBuffer",
                "TempBuffer use",
            )),
        }
    }

    /// The stream the buffer was allocated on.
    #[inline]
    pub(crate) fn home(&self) -> &Arc<StreamHandle> {
        &self.home
    }

    /// The context of the buffer (its home stream's).
    #[inline]
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        self.home.context()
    }

    /// Makes `stream` wait for the last write on another stream before a
    /// read it is about to queue.
    #[inline]
    pub(crate) fn read_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.unrecorded_on(stream) {
            return Ok(());
        }
        self.recorded_read_on(stream)
    }

    /// [`read_on`](Self::read_on) where the record is needed (out of
    /// line: the one-stream path stays small).
    #[inline(never)]
    fn recorded_read_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if let Some(capture) = self.temp_of() {
            return Self::temp_use(&capture, stream);
        }
        if self.noted_in_capture(stream) {
            return Ok(());
        }
        self.shared().read_on(stream)
    }

    /// Makes `stream` wait for the last write and every read since, on
    /// other streams, before a write it is about to queue.
    #[inline]
    pub(crate) fn write_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.unrecorded_on(stream) {
            return Ok(());
        }
        self.recorded_write_on(stream)
    }

    /// [`write_on`](Self::write_on) where the record is needed (out of
    /// line: the one-stream path stays small).
    #[inline(never)]
    fn recorded_write_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if let Some(capture) = self.temp_of() {
            return Self::temp_use(&capture, stream);
        }
        if self.noted_in_capture(stream) {
            return Ok(());
        }
        self.shared().write_on(stream)
    }

    /// Whether a use on `stream` needs no record: nothing is recorded yet
    /// (every use so far was on the home stream) and this one is on the
    /// home stream too, outside a capture. [`read_on`](Self::read_on) and
    /// [`write_on`](Self::write_on) then do nothing.
    #[inline]
    pub(crate) fn unrecorded_on(&self, stream: &CudaStream) -> bool {
        self.record.get().is_none() && Arc::ptr_eq(&self.home, stream.handle()) && !stream.handle().is_capturing()
    }

    /// Whether `stream` captures: the buffer is then noted in the capture.
    fn noted_in_capture(&self, stream: &CudaStream) -> bool {
        match stream.handle().capture() {
            Some(capture) => {
                capture.note_buffer(self.shared(), stream);
                true
            }
            None => false,
        }
    }

    /// The record, made now if the buffer has none yet (a free deferred
    /// past a capture keeps it).
    pub(crate) fn shared(&self) -> &Arc<OrderShared> {
        self.record.get_or_init(|| {
            let ctx = self.home.context();
            // Every use so far was queued on the home stream, after the
            // allocation: to other streams, the home stream wrote last.
            let uses = Uses { writer: Some(self.home.clone()), readers: Vec::new() };
            Arc::new(OrderShared { uses: Mutex::new(uses), device: ctx.ordinal(), ctx: ctx.raw() as usize })
        })
    }

    /// The record if the buffer has one (a buffer without one was used on
    /// its home stream only).
    #[inline]
    pub(crate) fn recorded(&self) -> Option<&Arc<OrderShared>> {
        self.record.get()
    }

    /// A weak handle, for a graph node that uses the buffer.
    pub(crate) fn weak(&self) -> std::sync::Weak<OrderShared> {
        Arc::downgrade(self.shared())
    }
}

/// The order of a [`ManagedBuffer`](crate::ManagedBuffer), which the host
/// reads and writes too: always recorded, and refused in captures.
#[derive(Debug)]
pub(crate) struct ManagedOrder {
    shared: Arc<OrderShared>,
}

impl ManagedOrder {
    /// The order of a new managed buffer of `ctx`: no use yet.
    pub(crate) fn new(ctx: &CudaContext) -> ManagedOrder {
        let shared = OrderShared { uses: Mutex::default(), device: ctx.ordinal(), ctx: ctx.raw() as usize };
        ManagedOrder { shared: Arc::new(shared) }
    }

    /// Blocks the calling thread until the work queued through the safe API
    /// that conflicts with a host access has finished: the last write on
    /// any stream for a read (`write == false`), every use for a write (the
    /// uses are then forgotten: nothing is pending). Fails, without
    /// waiting, if one of those streams is capturing a graph now (its
    /// earlier work cannot be waited for without breaking the capture).
    pub(crate) fn wait_on_host(&self, write: bool) -> Result<(), DriverError> {
        let mut uses = self.shared.uses.lock().unwrap_or_else(|e| e.into_inner());
        let pending: Vec<Arc<StreamHandle>> = match write {
            false => uses.writer.iter().cloned().collect(),
            true => uses.writer.iter().chain(uses.readers.iter()).cloned().collect(),
        };
        if pending.iter().any(|h| h.capture().is_some()) {
            return Err(DriverError::new(
                crate::error::ErrorKind::InvalidArgument,
                "a stream that used this managed buffer is capturing a graph now, so the host cannot wait for \
                 its earlier work; end the capture (or synchronise that stream before it begins) and try again",
                "ManagedBuffer host access",
            ));
        }
        for handle in &pending {
            let event = handle.context().new_event_without_timing()?;
            event.record_on(handle)?;
            event.synchronize()?;
        }
        if write {
            *uses = Uses::default();
        }
        Ok(())
    }

    /// [`wait_on_host`](Self::wait_on_host) without blocking: whether the
    /// conflicting work has finished (every stream that holds some is
    /// idle; a capturing one counts as busy). On `true` for a write, the
    /// uses are forgotten as there.
    pub(crate) fn idle_for_host(&self, write: bool) -> Result<bool, DriverError> {
        let mut uses = self.shared.uses.lock().unwrap_or_else(|e| e.into_inner());
        let pending: Vec<Arc<StreamHandle>> = match write {
            false => uses.writer.iter().cloned().collect(),
            true => uses.writer.iter().chain(uses.readers.iter()).cloned().collect(),
        };
        for handle in pending {
            if handle.capture().is_some() || !CudaStream::from_handle(handle).is_complete()? {
                return Ok(false);
            }
        }
        if write {
            *uses = Uses::default();
        }
        Ok(true)
    }

    /// [`StreamOrder::read_on`]; refused (breaking the capture) on a
    /// capturing stream.
    pub(crate) fn read_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        Self::refuse_capture(stream)?;
        self.shared.read_on(stream)
    }

    /// [`StreamOrder::write_on`]; refused as [`read_on`](Self::read_on).
    pub(crate) fn write_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        Self::refuse_capture(stream)?;
        self.shared.write_on(stream)
    }

    /// A graph launch is not stopped by a host borrow: a managed buffer
    /// breaks the capture it meets, naming itself.
    fn refuse_capture(stream: &CudaStream) -> Result<(), DriverError> {
        match stream.handle().capture() {
            Some(capture) => {
                capture.break_with(MANAGED_IN_CAPTURE);
                Err(crate::graph::refused_in_capture("a ManagedBuffer in a graph"))
            }
            None => Ok(()),
        }
    }
}

impl OrderShared {
    /// The ordinal of the device whose context holds the buffer.
    pub(crate) fn device(&self) -> usize {
        self.device
    }

    /// Whether the buffer belongs to the context `ctx` (its raw handle).
    pub(crate) fn in_context(&self, ctx: &crate::CudaContext) -> bool {
        self.ctx == ctx.raw() as usize
    }

    /// [`StreamOrder::read_on`] without the capture check.
    pub(crate) fn read_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        let mut uses = self.uses.lock().unwrap_or_else(|e| e.into_inner());
        let earlier = uses.read(stream.handle(), Arc::ptr_eq);
        wait_for_all(stream, &earlier)
    }

    /// [`StreamOrder::write_on`] without the capture check.
    pub(crate) fn write_on(&self, stream: &CudaStream) -> Result<(), DriverError> {
        let mut uses = self.uses.lock().unwrap_or_else(|e| e.into_inner());
        let earlier = uses.write(stream.handle(), Arc::ptr_eq);
        wait_for_all(stream, &earlier)
    }
}

/// Queues on `stream` a wait for everything queued so far on each of
/// `earlier` (an event recorded there now; the event may belong to another
/// context, as in a peer copy).
fn wait_for_all(stream: &CudaStream, earlier: &[Arc<StreamHandle>]) -> Result<(), DriverError> {
    for handle in earlier {
        let event = handle.context().new_event_without_timing()?;
        event.record_on(handle)?;
        // Dropping the event after the wait is queued is allowed: the driver
        // releases it once it has completed.
        stream.wait(&event)?;
    }
    Ok(())
}

/// Who used the buffer since its last write; generic over the stream so the
/// rule can be tested without a driver.
#[derive(Debug)]
struct Uses<S> {
    /// The stream of the last write, if any.
    writer: Option<S>,
    /// Streams already ordered after that write that have read since (the
    /// writer itself is never listed).
    readers: Vec<S>,
}

impl<S> Default for Uses<S> {
    fn default() -> Self {
        Uses { writer: None, readers: Vec::new() }
    }
}

impl<S: Clone> Uses<S> {
    /// Notes a read on `on`; returns the streams it must wait for.
    fn read(&mut self, on: &S, same: impl Fn(&S, &S) -> bool) -> Vec<S> {
        let Some(writer) = &self.writer else {
            // Nothing written through a stream yet: nothing to wait for, and
            // a later write must wait for this read.
            if !self.readers.iter().any(|r| same(r, on)) {
                self.readers.push(on.clone());
            }
            return Vec::new();
        };
        if same(writer, on) || self.readers.iter().any(|r| same(r, on)) {
            return Vec::new();
        }
        let wait = vec![writer.clone()];
        self.readers.push(on.clone());
        wait
    }

    /// Notes a write on `on`; returns the streams it must wait for.
    fn write(&mut self, on: &S, same: impl Fn(&S, &S) -> bool) -> Vec<S> {
        if self.readers.is_empty() && self.writer.as_ref().is_some_and(|w| same(w, on)) {
            return Vec::new(); // the stream wrote last: nothing changes
        }
        let mut wait: Vec<S> = Vec::new();
        for s in self.writer.iter().chain(self.readers.iter()) {
            if !same(s, on) && !wait.iter().any(|w| same(w, s)) {
                wait.push(s.clone());
            }
        }
        self.writer = Some(on.clone());
        self.readers.clear();
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::Uses;

    fn same(a: &char, b: &char) -> bool {
        a == b
    }

    #[test]
    fn one_stream_never_waits() {
        let mut uses = Uses::default();
        for _ in 0..3 {
            assert!(uses.write(&'a', same).is_empty());
            assert!(uses.read(&'a', same).is_empty());
        }
    }

    #[test]
    fn a_read_on_another_stream_waits_for_the_write_once() {
        let mut uses = Uses::default();
        assert!(uses.write(&'a', same).is_empty());
        assert_eq!(uses.read(&'b', same), vec!['a']);
        assert!(uses.read(&'b', same).is_empty(), "b is already ordered after the write");
        assert_eq!(uses.read(&'c', same), vec!['a']);
    }

    #[test]
    fn readers_do_not_wait_for_each_other() {
        let mut uses = Uses::default();
        assert!(uses.read(&'a', same).is_empty());
        assert!(uses.read(&'b', same).is_empty());
    }

    #[test]
    fn a_write_waits_for_the_last_write_and_every_read_since() {
        let mut uses = Uses::default();
        uses.write(&'a', same);
        uses.read(&'b', same);
        uses.read(&'c', same);
        let mut wait = uses.write(&'d', same);
        wait.sort();
        assert_eq!(wait, vec!['a', 'b', 'c']);
        // The new write is the only thing a later use waits for.
        assert_eq!(uses.read(&'a', same), vec!['d']);
    }

    #[test]
    fn a_write_waits_for_reads_before_any_write() {
        let mut uses = Uses::default();
        uses.read(&'a', same);
        uses.read(&'b', same);
        assert_eq!(uses.write(&'b', same), vec!['a'], "its own stream's read is already in order");
    }

    #[test]
    fn a_write_by_the_last_writer_keeps_the_record() {
        let mut uses = Uses::default();
        uses.write(&'a', same);
        assert!(uses.write(&'a', same).is_empty());
        assert_eq!(uses.writer, Some('a'));
        assert_eq!(uses.read(&'b', same), vec!['a'], "another stream still waits for it");
    }

    #[test]
    fn a_write_after_its_own_stream_read_waits_for_the_other_readers_only() {
        let mut uses = Uses::default();
        uses.write(&'a', same);
        uses.read(&'b', same);
        assert_eq!(uses.write(&'a', same), vec!['b']);
        assert!(uses.write(&'a', same).is_empty());
    }
}
