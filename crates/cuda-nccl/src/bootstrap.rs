//! Getting rank 0's [`UniqueId`] to every rank of a job: [`Bootstrap`]
//! (an environment variable a launcher sets, a file, or a TCP rendezvous
//! on an address), and [`World`], a process's rank, world size and
//! bootstrap read from the environment.
//!
//! The TCP rendezvous is the one a multi-node job uses: rank 0 listens on
//! the address (`host:port`, reachable from every node), every other rank
//! connects, says its rank and the world size, and receives the id. NCCL
//! then connects the ranks itself (its own bootstrap and network, steered
//! by `NCCL_SOCKET_IFNAME`, `NCCL_IB_HCA` and friends; see docs/NCCL.md).
//!
//! ```
//! use cuda_core::CudaContext;
//! use cuda_nccl::{Bootstrap, Communicator};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
//! // Two ranks (threads here; processes or machines in a real job) meet
//! // on a TCP address that rank 0 listens on.
//! let addr = "127.0.0.1:29517";
//! let ranks: Vec<_> = (0..2)
//!     .map(|rank| {
//!         std::thread::spawn(move || -> Result<usize, cuda_nccl::NcclError> {
//!             let ctx = CudaContext::new(0)?;
//!             let boot = Bootstrap::Tcp(addr.to_string());
//!             let comm = Communicator::from_bootstrap(&ctx, &boot, rank, 2, Duration::from_secs(30))?;
//!             Ok(comm.size())
//!         })
//!     })
//!     .collect();
//! for r in ranks {
//!     assert_eq!(r.join().unwrap()?, 2);
//! }
//! # Ok(()) }
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuda_core::CudaContext;

use crate::comm::{Communicator, UniqueId};
use crate::result::NcclError;
use crate::sys::NCCL_UNIQUE_ID_BYTES;

/// How the ranks of a job get rank 0's unique id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bootstrap {
    /// The id is already in this environment variable (256 hex digits) for
    /// every rank: a launcher made it (`UniqueId::new`) and set it.
    Env(String),
    /// Rank 0 writes the id to this file (atomically: a temporary file,
    /// then a rename); the others wait for it to appear. Use a fresh path
    /// per job (a stale file from an earlier job would be read).
    File(PathBuf),
    /// Rank 0 listens on this address (`host:port`); the others connect
    /// to it and receive the id. Works across machines.
    Tcp(String),
    /// A world of one rank: rank 0 makes the id, nobody needs it.
    Alone,
}

/// The bytes that open every rendezvous message.
const MAGIC: &[u8; 8] = b"OXNCCL1\0";
/// The bytes that open a refusal.
const REFUSED: &[u8; 8] = b"OXNCCLE\0";

impl Bootstrap {
    /// The job's unique id, as rank `rank` of `size` sees it: made here
    /// on rank 0 (except for [`Bootstrap::Env`]), received elsewhere,
    /// waiting at most `timeout` for the other side.
    pub fn unique_id(&self, ctx: &Arc<CudaContext>, rank: usize, size: usize, timeout: Duration) -> Result<UniqueId, NcclError> {
        if size == 0 || rank >= size {
            return Err(NcclError::BadWorld(format!("rank {rank} of a world of {size} ranks does not exist")));
        }
        match self {
            Bootstrap::Alone if size == 1 => UniqueId::new(ctx),
            Bootstrap::Alone => Err(NcclError::Bootstrap(format!(
                "a world of {size} ranks needs a bootstrap (set OXIDE_NCCL_ADDR=host:port, OXIDE_NCCL_ID_FILE or \
                 OXIDE_NCCL_ID; docs/NCCL.md)"
            ))),
            Bootstrap::Env(var) => {
                let text = std::env::var(var).map_err(|_| {
                    NcclError::Bootstrap(format!("the environment variable {var} (the job's unique id) is not set"))
                })?;
                text.parse()
            }
            Bootstrap::File(path) if rank == 0 => {
                let id = UniqueId::new(ctx)?;
                let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
                let io = |e: std::io::Error| NcclError::Bootstrap(format!("writing {}: {e}", path.display()));
                std::fs::write(&tmp, id.to_string()).map_err(io)?;
                std::fs::rename(&tmp, path).map_err(io)?;
                Ok(id)
            }
            Bootstrap::File(path) => {
                let start = Instant::now();
                loop {
                    if let Ok(text) = std::fs::read_to_string(path) {
                        return text.parse();
                    }
                    if start.elapsed() >= timeout {
                        return Err(NcclError::Bootstrap(format!(
                            "rank 0 did not write {} within {timeout:?}: is rank 0 running, and is the path on a \
                             file system every rank shares?",
                            path.display()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Bootstrap::Tcp(addr) if rank == 0 => serve(ctx, addr, size, timeout),
            Bootstrap::Tcp(addr) => fetch(addr, rank, size, timeout),
        }
    }
}

/// Rank 0's side of the TCP rendezvous: makes the id and hands it to the
/// `size - 1` other ranks.
fn serve(ctx: &Arc<CudaContext>, addr: &str, size: usize, timeout: Duration) -> Result<UniqueId, NcclError> {
    let err = |what: String| NcclError::Bootstrap(what);
    let listener = TcpListener::bind(addr).map_err(|e| {
        err(format!("rank 0 cannot listen on {addr}: {e} (is the port free, and the host one of this machine's addresses?)"))
    })?;
    let id = UniqueId::new(ctx)?;
    listener.set_nonblocking(true).map_err(|e| err(format!("{addr}: {e}")))?;
    let start = Instant::now();
    let mut seen = vec![false; size];
    seen[0] = true;
    while seen.iter().any(|s| !s) {
        match listener.accept() {
            Ok((mut sock, peer)) => {
                let _ = sock.set_nonblocking(false);
                let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
                let mut hello = [0u8; 16];
                if sock.read_exact(&mut hello).is_err() || &hello[..8] != MAGIC {
                    continue; // not one of ours (a port scanner, a stale client)
                }
                let rank = u32::from_le_bytes(hello[8..12].try_into().expect("4 bytes")) as usize;
                let their_size = u32::from_le_bytes(hello[12..16].try_into().expect("4 bytes")) as usize;
                let refusal = if their_size != size {
                    Some(format!("rank {rank} at {peer} says the world has {their_size} ranks, rank 0 says {size}"))
                } else if rank == 0 || rank >= size {
                    Some(format!("{peer} claims rank {rank}, which is not a rank 1..{size}"))
                } else if seen[rank] {
                    Some(format!("rank {rank} joined twice (the second from {peer}); every rank needs its own number"))
                } else {
                    None
                };
                if let Some(why) = refusal {
                    let mut msg = REFUSED.to_vec();
                    msg.extend_from_slice(why.as_bytes());
                    let _ = sock.write_all(&msg);
                    return Err(err(why));
                }
                let mut msg = MAGIC.to_vec();
                msg.extend_from_slice(id.as_bytes());
                sock.write_all(&msg).map_err(|e| err(format!("sending the id to rank {rank} at {peer}: {e}")))?;
                seen[rank] = true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() >= timeout {
                    let missing: Vec<usize> = (0..size).filter(|&r| !seen[r]).collect();
                    return Err(err(format!("rank(s) {missing:?} did not connect to {addr} within {timeout:?}")));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(err(format!("accepting on {addr}: {e}"))),
        }
    }
    Ok(id)
}

/// A peer's side: connects (retrying while rank 0 is not listening yet)
/// and receives the id.
fn fetch(addr: &str, rank: usize, size: usize, timeout: Duration) -> Result<UniqueId, NcclError> {
    let err = |what: String| NcclError::Bootstrap(what);
    let start = Instant::now();
    let mut last = String::new();
    loop {
        if start.elapsed() >= timeout {
            return Err(err(format!("rank {rank} could not reach rank 0 at {addr} within {timeout:?} ({last})")));
        }
        let addrs: Vec<_> = match addr.to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) => return Err(err(format!("{addr} is not an address: {e}"))),
        };
        let Some(sock) = addrs.iter().find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(2)).map_err(|e| last = e.to_string()).ok())
        else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let mut sock = sock;
        let _ = sock.set_read_timeout(Some(timeout.saturating_sub(start.elapsed()).max(Duration::from_millis(100))));
        let mut hello = MAGIC.to_vec();
        hello.extend_from_slice(&(rank as u32).to_le_bytes());
        hello.extend_from_slice(&(size as u32).to_le_bytes());
        sock.write_all(&hello).map_err(|e| err(format!("rank {rank} -> {addr}: {e}")))?;
        let mut head = [0u8; 8];
        sock.read_exact(&mut head).map_err(|e| err(format!("rank {rank} waiting for the id from {addr}: {e}")))?;
        if &head == REFUSED {
            let mut why = String::new();
            let _ = sock.read_to_string(&mut why);
            return Err(err(format!("rank 0 refused rank {rank}: {why}")));
        }
        if &head != MAGIC {
            return Err(err(format!("{addr} is not an oxide rendezvous (another program listens there?)")));
        }
        let mut id = [0u8; NCCL_UNIQUE_ID_BYTES];
        sock.read_exact(&mut id).map_err(|e| err(format!("rank {rank} reading the id from {addr}: {e}")))?;
        return Ok(UniqueId::from_bytes(id));
    }
}

/// This process's place in a job, from the environment a launcher sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct World {
    /// `OXIDE_RANK`, else `RANK` (torchrun's name); 0 if neither is set.
    pub rank: usize,
    /// `OXIDE_WORLD_SIZE`, else `WORLD_SIZE`; 1 if neither is set.
    pub size: usize,
    /// `OXIDE_LOCAL_RANK`, else `LOCAL_RANK`, else the rank: which GPU of
    /// this machine to use.
    pub local_rank: usize,
    /// `OXIDE_NCCL_ID` (an id in hex) → [`Bootstrap::Env`];
    /// `OXIDE_NCCL_ID_FILE` → [`Bootstrap::File`]; `OXIDE_NCCL_ADDR`
    /// (`host:port`), else `MASTER_ADDR` and `MASTER_PORT` →
    /// [`Bootstrap::Tcp`]; none → [`Bootstrap::Alone`].
    pub bootstrap: Bootstrap,
}

impl World {
    /// Reads the variables [`World`]'s fields name.
    pub fn from_env() -> Result<World, NcclError> {
        fn num(names: &[&str]) -> Result<Option<usize>, NcclError> {
            for name in names {
                if let Ok(v) = std::env::var(name) {
                    return v.trim().parse().map(Some).map_err(|_| {
                        NcclError::Bootstrap(format!("{name}={v} is not a non-negative number"))
                    });
                }
            }
            Ok(None)
        }
        let rank = num(&["OXIDE_RANK", "RANK"])?.unwrap_or(0);
        let size = num(&["OXIDE_WORLD_SIZE", "WORLD_SIZE"])?.unwrap_or(1);
        let local_rank = num(&["OXIDE_LOCAL_RANK", "LOCAL_RANK"])?.unwrap_or(rank);
        if size == 0 || rank >= size {
            return Err(NcclError::BadWorld(format!("rank {rank} of a world of {size} ranks (from the environment) does not exist")));
        }
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        let bootstrap = if var("OXIDE_NCCL_ID").is_some() {
            Bootstrap::Env("OXIDE_NCCL_ID".into())
        } else if let Some(p) = var("OXIDE_NCCL_ID_FILE") {
            Bootstrap::File(p.into())
        } else if let Some(a) = var("OXIDE_NCCL_ADDR") {
            Bootstrap::Tcp(a)
        } else if let (Some(host), Some(port)) = (var("MASTER_ADDR"), var("MASTER_PORT")) {
            Bootstrap::Tcp(format!("{host}:{port}"))
        } else {
            Bootstrap::Alone
        };
        Ok(World { rank, size, local_rank, bootstrap })
    }
}

impl Communicator {
    /// Rank `rank` of a communicator of `size` ranks whose id comes
    /// through `bootstrap` ([`Bootstrap::unique_id`], then
    /// [`init_rank`](Self::init_rank)); each step waits at most `timeout`.
    pub fn from_bootstrap(
        ctx: &Arc<CudaContext>,
        bootstrap: &Bootstrap,
        rank: usize,
        size: usize,
        timeout: Duration,
    ) -> Result<Communicator, NcclError> {
        let id = bootstrap.unique_id(ctx, rank, size, timeout)?;
        Communicator::init_rank_with_timeout(ctx, &id, rank, size, timeout)
    }
}
