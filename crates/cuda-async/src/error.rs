//! [`AsyncError`]: every way a [`DeviceOperation`](crate::DeviceOperation)
//! can fail, delivered to whoever waits for it (`.sync()` or `.await`).

use std::fmt;
use std::process::ExitCode;

use cuda_core::{DriverError, ErrorKind, GraphError};
use cuda_host::HostError;

/// Why a device operation failed.
///
/// Errors of any step of a composed operation end the whole operation (the
/// later steps are not enqueued) and reach the task awaiting it as this type:
/// a failed enqueue at once, a kernel fault on the GPU when the stream
/// reports it.
#[derive(Debug)]
#[non_exhaustive]
pub enum AsyncError {
    /// The CUDA driver reported an error (this includes "no driver" and "no
    /// GPU", and a kernel that faulted while the operation ran).
    Driver(DriverError),
    /// A kernel launch was refused before it reached the driver (wrong
    /// module, a launch shape the kernel cannot run, …).
    Launch(HostError),
    /// An operation's step ran without a stream to put its work on: it was
    /// enqueued by hand with a host-only [`ExecutionContext`](crate::ExecutionContext).
    NoStream {
        /// What needed the stream.
        step: &'static str,
    },
    /// A stream pool cannot be built as asked.
    InvalidPool(String),
    /// A graph could not be captured, instantiated or launched
    /// ([`into_graph`](crate::DeviceOperation::into_graph),
    /// [`DeviceGraph::replay`](crate::DeviceGraph::replay)); the message
    /// names the call that broke a capture.
    Graph(GraphError),
    /// A host step of an operation (a [`then`](crate::DeviceOperation::then)
    /// or [`launch`](crate::launch) closure) failed with its own error.
    Host(Box<dyn std::error::Error + Send + Sync>),
}

impl AsyncError {
    /// Wraps an error of the caller's own (for closures that return
    /// `Result<_, AsyncError>`).
    pub fn host(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        AsyncError::Host(error.into())
    }

    /// The driver error, if that is what this is (directly or inside a
    /// launch error).
    pub fn driver_error(&self) -> Option<&DriverError> {
        match self {
            AsyncError::Driver(e)
            | AsyncError::Launch(HostError::Driver(e))
            | AsyncError::Graph(GraphError::Driver(e)) => Some(e),
            _ => None,
        }
    }

    /// Whether the error only says that this machine cannot run kernels (no
    /// driver or no GPU), as opposed to a failure of the program.
    pub fn is_no_gpu(&self) -> bool {
        self.driver_error()
            .is_some_and(|e| matches!(e.kind(), ErrorKind::DriverNotFound | ErrorKind::NoDevice))
    }

    /// Prints the error for a program's `main` and picks its exit code like
    /// [`cuda_host::report_failure`]: [`cuda_host::NO_GPU_EXIT_CODE`] with a
    /// plain "no GPU" line on a machine without a GPU, otherwise 1.
    pub fn report(&self) -> ExitCode {
        match self {
            AsyncError::Driver(e) => cuda_host::report_failure(e),
            AsyncError::Launch(e) => cuda_host::report_failure(e),
            other => cuda_host::report_failure(other),
        }
    }
}

impl fmt::Display for AsyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AsyncError::Driver(e) => write!(f, "{e}"),
            AsyncError::Launch(e) => write!(f, "{e}"),
            AsyncError::NoStream { step } => write!(
                f,
                "{step} needs a CUDA stream, but the operation was enqueued without one; \
                 schedule it on a stream pool (`.await`, `.sync()`, `.schedule(&pool)`) or \
                 on a stream (`.sync_on(&stream)`)"
            ),
            AsyncError::InvalidPool(why) => write!(f, "invalid stream pool: {why}"),
            AsyncError::Graph(e) => write!(f, "{e}"),
            AsyncError::Host(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AsyncError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AsyncError::Driver(e) => Some(e),
            AsyncError::Launch(e) => Some(e),
            AsyncError::Graph(e) => Some(e),
            AsyncError::Host(e) => Some(&**e),
            _ => None,
        }
    }
}

impl From<DriverError> for AsyncError {
    fn from(e: DriverError) -> Self {
        AsyncError::Driver(e)
    }
}

impl From<GraphError> for AsyncError {
    fn from(e: GraphError) -> Self {
        match e {
            GraphError::Driver(d) => AsyncError::Driver(d),
            other => AsyncError::Graph(other),
        }
    }
}

impl From<HostError> for AsyncError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::Driver(d) => AsyncError::Driver(d),
            other => AsyncError::Launch(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let e = AsyncError::NoStream { step: "copy_to_host" };
        let text = e.to_string();
        assert!(text.starts_with("copy_to_host needs a CUDA stream"), "{text}");
        assert!(text.contains(".sync_on(&stream)"), "{text}");
        assert!(AsyncError::InvalidPool("a pool needs at least one stream".into())
            .to_string()
            .ends_with("at least one stream"));
        let host = AsyncError::host("the input file is empty");
        assert_eq!(host.to_string(), "the input file is empty");
        assert!(std::error::Error::source(&host).is_some());
        assert!(!host.is_no_gpu());
    }

    #[test]
    fn driver_errors_stay_typed() {
        let oom = DriverError::from_code(2, "cuMemAlloc_v2");
        let e: AsyncError = HostError::Driver(oom.clone()).into();
        assert!(matches!(e, AsyncError::Driver(_)), "a launch's driver error is a driver error");
        assert_eq!(e.driver_error(), Some(&oom));
        assert!(!e.is_no_gpu());
        let none: AsyncError = DriverError::from_code(100, "cuInit").into();
        assert!(none.is_no_gpu());
    }
}
