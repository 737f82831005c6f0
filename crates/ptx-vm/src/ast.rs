//! The syntax tree the parser builds: a PTX module as written, names not yet
//! resolved, opcodes and modifiers still text.
//!
//! It owns nothing but shape. Meaning (what `.rn` does, where `%r1` lives,
//! which label a branch names) is given by `decode`.

/// A state space, as a declaration names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Reg,
    Const,
    Global,
    Local,
    Param,
    Shared,
}

/// How a module-level symbol is linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Linkage {
    /// Neither `.visible`, `.extern` nor `.weak`.
    #[default]
    Internal,
    Visible,
    Extern,
    Weak,
}

/// One element of an initialiser.
#[derive(Clone, Debug, PartialEq)]
pub enum InitElem {
    /// An integer (the bits, wrapped to 64).
    Int(u64),
    /// `0fXXXXXXXX`.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal float.
    F64(u64),
    /// The address of a symbol plus a byte offset; `generic(sym)` when
    /// `generic` is set.
    Symbol {
        name: String,
        offset: i64,
        generic: bool,
    },
}

/// A variable: `.global .align 8 .u64 x[3] = {…};`, `.reg .b32 %r<7>;`,
/// `.param .align 8 .b8 p[16]`.
#[derive(Clone, Debug)]
pub struct VarDecl {
    pub space: Space,
    pub linkage: Linkage,
    pub align: Option<u32>,
    /// 1, or 2/4 for `.v2`/`.v4`.
    pub vector: u32,
    /// The element type without its dot (`b32`, `u64`, `pred`, `f16x2`).
    pub ty: String,
    pub name: String,
    /// `%r<42>`: the name is a prefix of 42 registers, `%r0` .. `%r41`.
    pub range: Option<u32>,
    /// Array dimensions; `None` for `[]` (an unsized extern array).
    pub dims: Vec<Option<u64>>,
    pub init: Option<Vec<InitElem>>,
    pub line: u32,
    pub column: u32,
}

/// A `.func` or `.entry`.
#[derive(Clone, Debug)]
pub struct FuncDecl {
    pub entry: bool,
    pub linkage: Linkage,
    pub name: String,
    pub rets: Vec<VarDecl>,
    pub params: Vec<VarDecl>,
    /// `None` for a declaration (`.extern .func vprintf(…);`).
    pub body: Option<Vec<Stmt>>,
    pub maxntid: Option<[u32; 3]>,
    pub reqntid: Option<[u32; 3]>,
    pub reqnctapercluster: Option<[u32; 3]>,
    pub noreturn: bool,
    pub line: u32,
    pub column: u32,
}

/// A module-level item.
#[derive(Clone, Debug)]
pub enum Item {
    Var(VarDecl),
    Func(FuncDecl),
}

/// A parsed module.
#[derive(Clone, Debug, Default)]
pub struct AstModule {
    pub items: Vec<Item>,
    pub address_size: u32,
}

/// One statement of a function body.
#[derive(Clone, Debug)]
pub enum Stmt {
    Decl(VarDecl),
    Label {
        name: String,
        line: u32,
        column: u32,
    },
    Inst(Inst),
    /// `{ … }`: a scope (call sequences, inline asm with its own registers).
    Block(Vec<Stmt>),
    /// `$L_brx_0: .branchtargets $L1, $L2;`
    BranchTargets {
        label: String,
        targets: Vec<String>,
    },
    /// `prototype_36 : .callprototype (.param .b32 _) _ (.param .b32 _);`
    CallPrototype {
        label: String,
        rets: Vec<VarDecl>,
        params: Vec<VarDecl>,
    },
}

/// An operand as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A register, symbol, label or function name; `_` is the sink.
    Name(String),
    /// `%tid.x`: a name with a component.
    Component(String, String),
    /// `sym+8` outside brackets.
    SymbolOffset(String, i64),
    Int(u64),
    F32(u32),
    F64(u64),
    /// `[base+offset]`; `base` is `None` for `[1024]`.
    Address {
        base: Option<String>,
        offset: i64,
    },
    /// `[a, b, …]` with more than one element (tensor coordinates).
    AddressList(Vec<Operand>),
    /// `{a, b}`.
    Vector(Vec<Operand>),
    /// `!%p`.
    Not(Box<Operand>),
    /// `d|p`.
    Pair(Box<Operand>, Box<Operand>),
    /// `(a, b)` in a call.
    List(Vec<Operand>),
}

/// An instruction as written.
#[derive(Clone, Debug)]
pub struct Inst {
    /// `@%p` / `@!%p`: the predicate and whether it is negated.
    pub guard: Option<(String, bool)>,
    pub opcode: String,
    /// The modifiers in order, each without its dot.
    pub mods: Vec<String>,
    pub operands: Vec<Operand>,
    /// The byte range of the instruction's text in the source.
    pub span: (usize, usize),
    pub line: u32,
    pub column: u32,
}
