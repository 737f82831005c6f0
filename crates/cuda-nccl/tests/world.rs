//! `World::from_env`: what a launcher's variables (oxide's, or torchrun's)
//! give, and the errors for values that cannot be a world. One test in its
//! own binary: it sets process-wide variables.

use std::path::PathBuf;

use cuda_nccl::{Bootstrap, NcclError, World};

#[test]
fn a_launchers_variables_make_the_world() {
    // SAFETY (edition 2021: safe): the only test of this binary.
    let set = |vars: &[(&str, &str)]| {
        for v in ["OXIDE_RANK", "RANK", "OXIDE_WORLD_SIZE", "WORLD_SIZE", "OXIDE_LOCAL_RANK", "LOCAL_RANK", "OXIDE_NCCL_ID",
                  "OXIDE_NCCL_ID_FILE", "OXIDE_NCCL_ADDR", "MASTER_ADDR", "MASTER_PORT"] {
            std::env::remove_var(v);
        }
        for (k, v) in vars {
            std::env::set_var(k, v);
        }
    };
    set(&[]);
    assert_eq!(World::from_env().unwrap(), World { rank: 0, size: 1, local_rank: 0, bootstrap: Bootstrap::Alone });

    set(&[("OXIDE_RANK", "3"), ("OXIDE_WORLD_SIZE", "4"), ("OXIDE_NCCL_ADDR", "node0:29500")]);
    assert_eq!(World::from_env().unwrap(), World { rank: 3, size: 4, local_rank: 3, bootstrap: Bootstrap::Tcp("node0:29500".into()) });

    // torchrun's names, with a local rank of its own.
    set(&[("RANK", "9"), ("WORLD_SIZE", "16"), ("LOCAL_RANK", "1"), ("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "29400")]);
    assert_eq!(
        World::from_env().unwrap(),
        World { rank: 9, size: 16, local_rank: 1, bootstrap: Bootstrap::Tcp("10.0.0.1:29400".into()) }
    );

    // An id in the environment wins over a file, which wins over an address.
    set(&[("OXIDE_WORLD_SIZE", "2"), ("OXIDE_NCCL_ID_FILE", "/tmp/id"), ("OXIDE_NCCL_ADDR", "h:1")]);
    assert_eq!(World::from_env().unwrap().bootstrap, Bootstrap::File(PathBuf::from("/tmp/id")));
    set(&[("OXIDE_WORLD_SIZE", "2"), ("OXIDE_NCCL_ID", "00"), ("OXIDE_NCCL_ID_FILE", "/tmp/id")]);
    assert_eq!(World::from_env().unwrap().bootstrap, Bootstrap::Env("OXIDE_NCCL_ID".into()));

    set(&[("OXIDE_RANK", "4"), ("OXIDE_WORLD_SIZE", "4")]);
    let e = World::from_env().unwrap_err();
    assert!(matches!(e, NcclError::BadWorld(_)) && e.to_string().contains("rank 4 of a world of 4"), "{e}");
    set(&[("OXIDE_RANK", "one")]);
    let e = World::from_env().unwrap_err();
    assert!(e.to_string().contains("OXIDE_RANK=one is not a non-negative number"), "{e}");
}
