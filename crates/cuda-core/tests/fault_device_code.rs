//! A kernel fault poisons its context (and on a GPU its process): the
//! scenario of `common/fault_scenario.rs`, emulated as device code (the
//! PTX on ptx-vm) where there is no GPU.

mod common {
    pub mod fault_scenario;
}

#[test]
fn a_fault_poisons_its_context_and_on_a_gpu_its_process() {
    common::fault_scenario::a_fault_poisons_its_context_and_on_a_gpu_its_process(cuda_core::emulator::Mode::DeviceCode);
}
