//! A capture borrows its stream: the stream cannot be dropped while the
//! capture is under way.
use cuda_core::CudaContext;

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let capture = stream.begin_capture().unwrap();
    drop(stream);
    let _graph = capture.end().unwrap();
}

// Expected (tests/reject/run.sh; substrings of one output line each):
//~ ERROR cannot move out of `stream` because it is borrowed
