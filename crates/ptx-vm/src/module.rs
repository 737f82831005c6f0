//! A loaded module: parsed, laid out and decoded.
//!
//! It owns the module's storage: one host allocation holding every
//! `.global` and `.const` variable with its initialiser (stable addresses
//! for the module's lifetime; the embedder reads and writes them through
//! [`Module::global`]), the layout of `.shared` variables in a block's
//! shared memory (dynamic shared memory, the `.extern .shared` array, starts
//! after them), and the decoded functions.

use std::collections::HashMap;
use std::ptr::NonNull;

use crate::ast::{AstModule, FuncDecl, InitElem, Item, Linkage, Space, Stmt, VarDecl};
use crate::decode::{decode_function, type_size, ModuleSymbols};
use crate::memory::function_pointer;
use crate::program::{Callee, Function, ParamLayout};
use crate::ParseError;

/// A `.global` or `.const` variable of a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalSymbol {
    /// Its host address (valid while the module lives).
    pub address: u64,
    /// Bytes.
    pub size: usize,
}

/// Host memory owned by a module: its variables.
struct Storage {
    ptr: NonNull<u8>,
    layout: std::alloc::Layout,
}

impl Storage {
    fn new(size: usize, align: usize) -> Storage {
        let layout = std::alloc::Layout::from_size_align(size.max(1), align.max(16))
            .unwrap_or(std::alloc::Layout::new::<u128>());
        // SAFETY: the layout has a nonzero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        Storage { ptr, layout }
    }

    fn base(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    fn write(&mut self, off: usize, bytes: &[u8]) {
        assert!(
            off + bytes.len() <= self.layout.size(),
            "initialiser outside its variable"
        );
        // SAFETY: in bounds of the allocation (checked above); nothing else
        // can access the storage while the module is being built.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.as_ptr().add(off), bytes.len())
        };
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        // SAFETY: allocated in `Storage::new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// A parsed and decoded PTX module, ready to launch kernels from.
///
/// It owns the storage of its `.global` and `.const` variables; launches
/// running concurrently on the same module share them (as kernels of one
/// CUDA module share its globals).
pub struct Module {
    pub(crate) source: String,
    pub(crate) functions: Vec<Function>,
    pub(crate) by_name: HashMap<String, u32>,
    globals: HashMap<String, GlobalSymbol>,
    storage: Storage,
    /// Bytes of static shared memory per block: every shared variable of
    /// the module, laid out once for all its kernels.
    pub(crate) static_shared: u32,
    /// What a GPU gives each kernel of them ([`Module::kernel_static_shared`]).
    kernel_static_shared: HashMap<String, u32>,
    /// Where dynamic shared memory starts.
    pub(crate) dynamic_shared_offset: u32,
    /// Functions whose address a variable's initialiser takes (vtables).
    pub(crate) address_taken: Vec<u32>,
}

// SAFETY: the storage is a plain allocation owned by the module; every access
// the VM makes to it is atomic (it is device memory shared by blocks running
// on several host threads), and the rest of the module is immutable.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("functions", &self.functions.len())
            .field("globals", &self.globals.len())
            .field("static_shared", &self.static_shared)
            .finish()
    }
}

/// The most memory a module's `.global` and `.const` variables may take.
const MAX_VARIABLE_BYTES: u64 = 1 << 30;

pub(crate) fn align_up(x: u64, a: u64) -> u64 {
    let a = a.max(1);
    x.div_ceil(a).saturating_mul(a)
}

pub(crate) fn var_size(v: &VarDecl) -> u64 {
    let elem = type_size(&v.ty).unwrap_or(0) * v.vector as u64;
    v.dims
        .iter()
        .fold(elem, |acc, d| acc.saturating_mul(d.unwrap_or(0)))
}

pub(crate) fn var_align(v: &VarDecl) -> u64 {
    v.align
        .map(|a| a as u64)
        .unwrap_or_else(|| (type_size(&v.ty).unwrap_or(1) * v.vector as u64).max(1))
}

fn collect_function_shared(f: &FuncDecl, stmts: &[Stmt], out: &mut Vec<(String, VarDecl)>) {
    for s in stmts {
        match s {
            Stmt::Decl(v) if v.space == Space::Shared => out.push((f.name.clone(), v.clone())),
            Stmt::Block(inner) => collect_function_shared(f, inner, out),
            _ => {}
        }
    }
}

impl Module {
    /// Parses PTX text (as `cuModuleLoadData` receives it) and decodes every
    /// function. Instructions the VM does not implement do not make this
    /// fail; launching a kernel that can reach one does.
    pub fn parse(ptx: &str) -> Result<Module, ParseError> {
        let ast = crate::parser::parse_module(ptx)?;
        Module::build(ptx, ast)
    }

    fn build(ptx: &str, ast: AstModule) -> Result<Module, ParseError> {
        let kernel_static_shared = crate::shared_usage::of_module(&ast);
        if ast.address_size != 64 {
            return Err(ParseError {
                line: 1,
                column: 1,
                message: format!(
                    ".address_size {} is not supported (only 64)",
                    ast.address_size
                ),
            });
        }
        let err = |v: &VarDecl, message: String| ParseError {
            line: v.line,
            column: v.column,
            message,
        };

        // Functions: a definition wins over declarations of the same name.
        let mut funcs: Vec<&FuncDecl> = Vec::new();
        let mut by_name: HashMap<String, u32> = HashMap::new();
        for item in &ast.items {
            if let Item::Func(f) = item {
                match by_name.get(&f.name) {
                    Some(&i) => {
                        if f.body.is_some() {
                            if funcs[i as usize].body.is_some() {
                                return Err(ParseError {
                                    line: f.line,
                                    column: f.column,
                                    message: format!("function `{}` is defined twice", f.name),
                                });
                            }
                            funcs[i as usize] = f;
                        }
                    }
                    None => {
                        by_name.insert(f.name.clone(), funcs.len() as u32);
                        funcs.push(f);
                    }
                }
            }
        }

        // .global/.const storage.
        let mut layout: Vec<(&VarDecl, u64)> = Vec::new();
        let mut size = 0u64;
        let mut max_align = 16u64;
        for item in &ast.items {
            let Item::Var(v) = item else { continue };
            if !matches!(v.space, Space::Global | Space::Const) {
                continue;
            }
            if v.linkage == Linkage::Extern {
                return Err(err(
                    v,
                    format!(
                        "extern variable `{}` cannot be resolved: the VM links no other module",
                        v.name
                    ),
                ));
            }
            if type_size(&v.ty).is_none() {
                return Err(err(v, format!("unknown type `.{}`", v.ty)));
            }
            if v.dims.iter().any(|d| d.is_none()) {
                return Err(err(v, format!("`{}` has an unsized dimension", v.name)));
            }
            let a = var_align(v);
            max_align = max_align.max(a);
            let off = align_up(size, a);
            size = off.saturating_add(var_size(v));
            layout.push((v, off));
        }
        // Device variables live in host memory: refuse absurd sizes rather
        // than abort on a failed allocation.
        if size > MAX_VARIABLE_BYTES || max_align > 1 << 20 {
            return Err(ParseError {
                line: 1,
                column: 1,
                message: format!("the module's .global/.const variables need {size} bytes (aligned to {max_align}); the VM allows {MAX_VARIABLE_BYTES}"),
            });
        }
        let mut storage = Storage::new(size as usize, max_align as usize);
        let base = storage.base();
        let mut globals = HashMap::new();
        for (v, off) in &layout {
            globals.insert(
                v.name.clone(),
                GlobalSymbol {
                    address: base + off,
                    size: var_size(v) as usize,
                },
            );
        }

        // Shared memory: module variables, then those declared in functions.
        let mut shared: HashMap<String, u32> = HashMap::new();
        let mut function_shared: HashMap<(String, String), u32> = HashMap::new();
        let mut shared_size = 0u64;
        let mut dynamic: Vec<&VarDecl> = Vec::new();
        let mut fn_shared = Vec::new();
        for f in &funcs {
            if let Some(body) = &f.body {
                collect_function_shared(f, body, &mut fn_shared);
            }
        }
        for item in &ast.items {
            let Item::Var(v) = item else { continue };
            if v.space != Space::Shared {
                continue;
            }
            if v.linkage == Linkage::Extern || v.dims.iter().any(|d| d.is_none()) {
                dynamic.push(v);
                continue;
            }
            let off = align_up(shared_size, var_align(v));
            shared_size = off.saturating_add(var_size(v));
            shared.insert(v.name.clone(), off as u32);
        }
        for (fname, v) in &fn_shared {
            let off = align_up(shared_size, var_align(v));
            shared_size = off.saturating_add(var_size(v));
            function_shared.insert((fname.clone(), v.name.clone()), off as u32);
        }
        let dyn_align = dynamic
            .iter()
            .map(|v| var_align(v))
            .max()
            .unwrap_or(16)
            .max(16);
        let dynamic_offset = align_up(shared_size, dyn_align);
        for v in dynamic {
            shared.insert(v.name.clone(), dynamic_offset as u32);
        }

        let symbols = ModuleSymbols {
            globals: globals
                .iter()
                .map(|(k, g)| (k.clone(), (g.address, g.size as u64)))
                .collect(),
            shared: shared.clone(),
            functions: by_name
                .iter()
                .map(|(k, &i)| {
                    (
                        k.clone(),
                        (i, if funcs[i as usize].body.is_some() {
                            None
                        } else {
                            match k.as_str() {
                                "vprintf" => Some(Callee::Vprintf),
                                "cudaGraphSetConditional" => Some(Callee::SetConditional),
                                _ => None,
                            }
                        }),
                    )
                })
                .collect(),
        };

        // Initialisers.
        let mut address_taken = Vec::new();
        for (v, off) in &layout {
            let Some(init) = &v.init else { continue };
            let elem = type_size(&v.ty).unwrap_or(1) as usize;
            let is_float = v.ty.starts_with('f');
            let total = var_size(v) as usize;
            if init.len() * elem > total {
                return Err(err(
                    v,
                    format!("`{}` has more initialisers than elements", v.name),
                ));
            }
            for (k, e) in init.iter().enumerate() {
                let value: u64 = match e {
                    InitElem::Int(x) => *x,
                    InitElem::F32(b) if elem == 8 && is_float => {
                        (f32::from_bits(*b) as f64).to_bits()
                    }
                    InitElem::F32(b) => *b as u64,
                    InitElem::F64(b) if elem == 4 && is_float => {
                        (f64::from_bits(*b) as f32).to_bits() as u64
                    }
                    InitElem::F64(b) => *b,
                    InitElem::Symbol { name, offset, .. } => {
                        let target = if let Some(g) = globals.get(name) {
                            g.address
                        } else if let Some(&i) = by_name.get(name) {
                            address_taken.push(i);
                            function_pointer(i)
                        } else {
                            return Err(err(v, format!("initialiser of `{}` names `{name}`, which is not a global variable or function", v.name)));
                        };
                        target.wrapping_add(*offset as u64)
                    }
                };
                let bytes = value.to_le_bytes();
                storage.write(*off as usize + k * elem, &bytes[..elem.min(8)]);
            }
        }

        let mut functions = Vec::with_capacity(funcs.len());
        for f in &funcs {
            functions.push(decode_function(f, &symbols, ptx, &function_shared)?);
        }
        Ok(Module {
            source: ptx.to_string(),
            functions,
            by_name,
            globals,
            storage,
            static_shared: shared_size as u32,
            kernel_static_shared,
            dynamic_shared_offset: dynamic_offset as u32,
            address_taken,
        })
    }

    /// The names of the module's kernels (`.entry` functions), in order.
    pub fn kernels(&self) -> impl Iterator<Item = &str> {
        self.functions
            .iter()
            .filter(|f| f.is_entry)
            .map(|f| f.name.as_str())
    }

    /// The size and alignment of each parameter of `kernel`, in order;
    /// `None` if there is no such kernel.
    pub fn kernel_params(&self, kernel: &str) -> Option<Vec<ParamLayout>> {
        let f = &self.functions[*self.by_name.get(kernel)? as usize];
        f.is_entry.then(|| f.kernel_params.clone())
    }

    /// The kernel (`.entry`) `name`, decoded: its parameters, its
    /// `.maxntid`/`.reqntid`/`.reqnctapercluster`; `None` if there is none.
    pub fn kernel(&self, name: &str) -> Option<&Function> {
        let f = &self.functions[*self.by_name.get(name)? as usize];
        f.is_entry.then_some(f)
    }

    /// The PTX text the module was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Bytes of static shared memory a block of kernel `name` gets on a GPU
    /// (what ptxas allocates to it: [`static_shared_per_kernel`]); `None`
    /// if there is no such kernel.
    ///
    /// [`static_shared_per_kernel`]: crate::static_shared_per_kernel
    pub fn kernel_static_shared(&self, name: &str) -> Option<u32> {
        self.kernel_static_shared.get(name).copied()
    }

    /// A `.global` or `.const` variable by name: its host address and size.
    /// The embedder reads and writes it there (the panic record pointer,
    /// `#[constant]` statics).
    pub fn global(&self, name: &str) -> Option<GlobalSymbol> {
        self.globals.get(name).copied()
    }

    /// The host memory of the module's variables.
    pub(crate) fn storage_range(&self) -> std::ops::Range<u64> {
        self.storage.base()..self.storage.base() + self.storage.layout.size() as u64
    }

    /// The text of instruction `index` of function `func`.
    pub(crate) fn inst_text(&self, func: u32, index: u32) -> &str {
        let f = &self.functions[func as usize];
        match f.source.get(index as usize) {
            Some(&(start, end, _)) if end > start => {
                self.source.get(start as usize..end as usize).unwrap_or("?")
            }
            _ => "(end of function)",
        }
    }

    /// The source line of instruction `index` of function `func`.
    pub(crate) fn inst_line(&self, func: u32, index: u32) -> u32 {
        self.functions[func as usize]
            .source
            .get(index as usize)
            .map(|s| s.2)
            .unwrap_or(0)
    }
}
