//! Names and descriptions of the common `CUresult` codes, as `cuda.h`
//! documents them: what `cuGetErrorName`/`cuGetErrorString` answer, for
//! when the driver itself cannot be asked (or is not the NVIDIA driver).

/// Name and short description of the common `CUresult` codes, used when the
/// driver itself cannot be asked.
pub fn builtin_name(code: i32) -> Option<(&'static str, &'static str)> {
    Some(match code {
        0 => ("CUDA_SUCCESS", "no error"),
        1 => ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
        2 => ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
        3 => ("CUDA_ERROR_NOT_INITIALIZED", "driver not initialized"),
        4 => ("CUDA_ERROR_DEINITIALIZED", "driver is shutting down"),
        34 => (
            "CUDA_ERROR_STUB_LIBRARY",
            "the loaded libcuda is a stub, not a real driver",
        ),
        36 => (
            "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
            "the call needs a newer driver",
        ),
        46 => (
            "CUDA_ERROR_DEVICE_UNAVAILABLE",
            "device busy or unavailable",
        ),
        100 => ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
        101 => ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
        200 => ("CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"),
        201 => ("CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
        209 => (
            "CUDA_ERROR_NO_BINARY_FOR_GPU",
            "no kernel image is available for this device",
        ),
        214 => ("CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error"),
        217 => ("CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"),
        218 => ("CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
        221 => (
            "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
            "PTX JIT compiler library not found",
        ),
        222 => (
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            "the PTX version is not supported by this driver",
        ),
        223 => (
            "CUDA_ERROR_JIT_COMPILATION_DISABLED",
            "PTX JIT compilation is disabled",
        ),
        300 => ("CUDA_ERROR_INVALID_SOURCE", "invalid device kernel source"),
        301 => ("CUDA_ERROR_FILE_NOT_FOUND", "file not found"),
        302 => (
            "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
            "shared object symbol not found",
        ),
        304 => (
            "CUDA_ERROR_OPERATING_SYSTEM",
            "an operating system call failed",
        ),
        400 => ("CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
        401 => (
            "CUDA_ERROR_ILLEGAL_STATE",
            "the operation is illegal in the current state",
        ),
        500 => ("CUDA_ERROR_NOT_FOUND", "named symbol not found"),
        600 => ("CUDA_ERROR_NOT_READY", "device not ready"),
        700 => (
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            "an illegal memory access was encountered",
        ),
        701 => (
            "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
            "too many resources requested for launch",
        ),
        702 => (
            "CUDA_ERROR_LAUNCH_TIMEOUT",
            "the launch timed out and was terminated",
        ),
        704 => ("CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"),
        705 => ("CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"),
        709 => (
            "CUDA_ERROR_CONTEXT_IS_DESTROYED",
            "the context has been destroyed",
        ),
        710 => ("CUDA_ERROR_ASSERT", "device-side assert triggered"),
        714 => ("CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"),
        715 => (
            "CUDA_ERROR_ILLEGAL_INSTRUCTION",
            "an illegal instruction was encountered",
        ),
        716 => ("CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
        717 => (
            "CUDA_ERROR_INVALID_ADDRESS_SPACE",
            "operation not supported on this address space",
        ),
        718 => ("CUDA_ERROR_INVALID_PC", "invalid program counter"),
        719 => ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
        720 => (
            "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
            "too many blocks in cooperative launch",
        ),
        800 => ("CUDA_ERROR_NOT_PERMITTED", "operation not permitted"),
        801 => ("CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
        802 => ("CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"),
        803 => (
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
            "driver and kernel module versions do not match",
        ),
        804 => (
            "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
            "forward compatibility not supported on this device",
        ),
        900 => ("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"),
        901 => (
            "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
            "operation failed due to a previous error during capture",
        ),
        903 => ("CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "the capture was not initiated in this stream"),
        904 => ("CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "the capture sequence contains a fork that was not joined to the primary stream"),
        905 => (
            "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
            "a dependency would have been created which crosses the capture sequence boundary",
        ),
        909 => ("CUDA_ERROR_TIMEOUT", "wait operation timed out"),
        910 => ("CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
        912 => ("CUDA_ERROR_INVALID_CLUSTER_SIZE", "a kernel launch error due to cluster misconfiguration"),
        999 => ("CUDA_ERROR_UNKNOWN", "unknown error"),
        _ => return None,
    })
}
