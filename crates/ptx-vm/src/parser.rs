//! The parser: tokens → [`AstModule`].
//!
//! It owns the grammar of a PTX module: the module directives, variable
//! declarations with their initialisers (arrays, `generic(sym)`, `sym +
//! offset`), `.func`/`.entry` headers with their parameter lists and
//! performance directives, and function bodies (declarations, labels,
//! instructions with guards, nested `{ }` scopes, `.branchtargets`,
//! `.callprototype`). Debug information is skipped: `.file` and `.loc` (which
//! end at the end of their line) and `.section` blocks.
//!
//! Instructions are kept generic (opcode, modifiers, operands): any
//! well-formed instruction parses, whether or not the VM implements it.

use crate::ast::*;
use crate::lexer::{lex, Tok, Token};
use crate::ParseError;

/// Parses a whole module.
pub fn parse_module(src: &str) -> Result<AstModule, ParseError> {
    let tokens = lex(src)?;
    let mut p = Parser {
        toks: &tokens,
        pos: 0,
        src,
    };
    p.module()
}

struct Parser<'a> {
    toks: &'a [Token<'a>],
    pos: usize,
    src: &'a str,
}

type PResult<T> = Result<T, ParseError>;

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Tok<'a>> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, n: usize) -> Option<&'a Tok<'a>> {
        self.toks.get(self.pos + n).map(|t| &t.tok)
    }

    fn here(&self) -> (u32, u32) {
        match self.toks.get(self.pos).or_else(|| self.toks.last()) {
            Some(t) => (t.line, t.column),
            None => (1, 1),
        }
    }

    fn err<T>(&self, message: impl Into<String>) -> PResult<T> {
        let (line, column) = self.here();
        Err(ParseError {
            line,
            column,
            message: message.into(),
        })
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "the end of the input".into(),
            Some(Tok::Ident(s)) | Some(Tok::Dot(s)) => format!("`{s}`"),
            Some(Tok::Int(v)) => format!("`{v}`"),
            Some(Tok::F32(_)) | Some(Tok::F64(_)) => "a float literal".into(),
            Some(Tok::Str(s)) => format!("\"{s}\""),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        }
    }

    fn next(&mut self) -> Option<&'a Tok<'a>> {
        let t = self.toks.get(self.pos).map(|t| &t.tok);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> PResult<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.err(format!("expected `{c}`, found {}", self.describe()))
        }
    }

    fn is_dot(&self, name: &str) -> bool {
        matches!(self.peek(), Some(Tok::Dot(s)) if *s == name)
    }

    fn eat_dot(&mut self, name: &str) -> bool {
        if self.is_dot(name) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> PResult<String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(s.to_string())
            }
            _ => self.err(format!("expected a name, found {}", self.describe())),
        }
    }

    fn int(&mut self) -> PResult<u64> {
        let neg = self.eat_punct('-');
        match self.peek() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(if neg { v.wrapping_neg() } else { *v })
            }
            _ => self.err(format!("expected an integer, found {}", self.describe())),
        }
    }

    /// Skips the rest of the current token's line (`.loc`, `.file`).
    fn skip_line(&mut self) {
        let line = self.toks[self.pos].line;
        while self.pos < self.toks.len() && self.toks[self.pos].line == line {
            self.pos += 1;
        }
    }

    /// Skips up to and including the next `;`.
    fn skip_statement(&mut self) {
        while let Some(t) = self.next() {
            if *t == Tok::Punct(';') {
                break;
            }
        }
    }

    /// Skips a balanced `{ … }` starting at the current `{`.
    fn skip_braces(&mut self) -> PResult<()> {
        self.expect_punct('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.next() {
                Some(Tok::Punct('{')) => depth += 1,
                Some(Tok::Punct('}')) => depth -= 1,
                Some(_) => {}
                None => return self.err("unterminated `{`"),
            }
        }
        Ok(())
    }

    fn module(&mut self) -> PResult<AstModule> {
        let mut module = AstModule {
            items: Vec::new(),
            address_size: 64,
        };
        while let Some(tok) = self.peek() {
            match tok {
                Tok::Dot(d) => match *d {
                    ".version" | ".target" => self.skip_line(),
                    ".file" | ".loc" => self.skip_line(),
                    ".address_size" => {
                        self.pos += 1;
                        module.address_size = self.int()? as u32;
                    }
                    ".section" => {
                        self.pos += 1;
                        while !self.is_punct('{') && self.peek().is_some() {
                            self.pos += 1;
                        }
                        self.skip_braces()?;
                    }
                    ".pragma" => self.skip_statement(),
                    _ => {
                        let item = self.item()?;
                        module.items.extend(item);
                    }
                },
                Tok::Punct(';') => {
                    self.pos += 1;
                }
                _ => return self.err(format!("expected a directive, found {}", self.describe())),
            }
        }
        Ok(module)
    }

    /// A module-level declaration: linkage, then a variable or a function.
    fn item(&mut self) -> PResult<Vec<Item>> {
        let mut linkage = Linkage::Internal;
        loop {
            if self.eat_dot(".visible") {
                linkage = Linkage::Visible;
            } else if self.eat_dot(".extern") {
                linkage = Linkage::Extern;
            } else if self.eat_dot(".weak") || self.eat_dot(".common") {
                linkage = Linkage::Weak;
            } else {
                break;
            }
        }
        if self.is_dot(".func") || self.is_dot(".entry") {
            return Ok(vec![Item::Func(self.function(linkage)?)]);
        }
        if self.is_dot(".alias") {
            return self.err("`.alias` is not supported");
        }
        let vars = self.var_decl(linkage)?;
        self.expect_punct(';')?;
        Ok(vars.into_iter().map(Item::Var).collect())
    }

    fn space(&mut self) -> PResult<Space> {
        let space = match self.peek() {
            Some(Tok::Dot(d)) => match *d {
                ".reg" => Space::Reg,
                ".const" => Space::Const,
                ".global" => Space::Global,
                ".local" => Space::Local,
                ".param" => Space::Param,
                ".shared" | ".shared::cta" => Space::Shared,
                _ => return self.err(format!("expected a state space, found {}", self.describe())),
            },
            _ => return self.err(format!("expected a state space, found {}", self.describe())),
        };
        self.pos += 1;
        Ok(space)
    }

    /// `space [.align N] [.vN] .type [attributes] name[<N>][dims] [= init] {, name…}`
    /// (without the `;`).
    fn var_decl(&mut self, linkage: Linkage) -> PResult<Vec<VarDecl>> {
        self.var_decl_list(linkage, true)
    }

    /// One declaration; `several` allows `name, name, …` after the type.
    fn var_decl_list(&mut self, linkage: Linkage, several: bool) -> PResult<Vec<VarDecl>> {
        let (line, column) = self.here();
        let space = self.space()?;
        let mut align = None;
        let mut vector = 1;
        let mut ty = None;
        while let Some(Tok::Dot(d)) = self.peek() {
            let d = *d;
            self.pos += 1;
            match d {
                ".align" => align = Some(self.int()? as u32),
                ".v2" => vector = 2,
                ".v4" => vector = 4,
                ".v8" => vector = 8,
                // Parameter attributes (`.ptr .global .align 4`).
                ".ptr" | ".global" | ".shared" | ".const" | ".local" => {}
                _ if ty.is_none() => ty = Some(d[1..].to_string()),
                _ => return self.err(format!("unexpected `{d}` in a declaration")),
            }
        }
        let Some(ty) = ty else {
            return self.err(format!("expected a type, found {}", self.describe()));
        };
        let mut out = Vec::new();
        loop {
            let (nline, ncolumn) = self.here();
            let name = self.ident()?;
            let mut range = None;
            if self.eat_punct('<') {
                range = Some(self.int()? as u32);
                self.expect_punct('>')?;
            }
            let mut dims = Vec::new();
            while self.eat_punct('[') {
                if self.eat_punct(']') {
                    dims.push(None);
                } else {
                    dims.push(Some(self.int()?));
                    self.expect_punct(']')?;
                }
            }
            let init = if self.eat_punct('=') {
                Some(self.initialiser()?)
            } else {
                None
            };
            out.push(VarDecl {
                space,
                linkage,
                align,
                vector,
                ty: ty.clone(),
                name,
                range,
                dims,
                init,
                line: if out.is_empty() { line } else { nline },
                column: if out.is_empty() { column } else { ncolumn },
            });
            if !several || !self.eat_punct(',') {
                break;
            }
        }
        Ok(out)
    }

    fn initialiser(&mut self) -> PResult<Vec<InitElem>> {
        let mut out = Vec::new();
        self.init_into(&mut out)?;
        Ok(out)
    }

    fn init_into(&mut self, out: &mut Vec<InitElem>) -> PResult<()> {
        if self.eat_punct('{') {
            if self.eat_punct('}') {
                return Ok(());
            }
            loop {
                self.init_into(out)?;
                if self.eat_punct('}') {
                    return Ok(());
                }
                self.expect_punct(',')?;
            }
        }
        out.push(self.init_elem()?);
        Ok(())
    }

    fn init_elem(&mut self) -> PResult<InitElem> {
        let neg = self.eat_punct('-');
        let elem = match self.peek() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                InitElem::Int(if neg { v.wrapping_neg() } else { *v })
            }
            Some(Tok::F32(b)) => {
                self.pos += 1;
                InitElem::F32(if neg { b ^ 0x8000_0000 } else { *b })
            }
            Some(Tok::F64(b)) => {
                self.pos += 1;
                InitElem::F64(if neg { b ^ (1 << 63) } else { *b })
            }
            Some(Tok::Ident(name)) if !neg => {
                self.pos += 1;
                let (name, generic) = if *name == "generic" && self.is_punct('(') {
                    self.pos += 1;
                    let inner = self.ident()?;
                    self.expect_punct(')')?;
                    (inner, true)
                } else {
                    (name.to_string(), false)
                };
                let mut offset = 0i64;
                loop {
                    if self.eat_punct('+') {
                        offset = offset.wrapping_add(self.int()? as i64);
                    } else if self.is_punct('-') && matches!(self.peek_at(1), Some(Tok::Int(_))) {
                        self.pos += 1;
                        offset = offset.wrapping_sub(self.int()? as i64);
                    } else {
                        break;
                    }
                }
                InitElem::Symbol {
                    name,
                    offset,
                    generic,
                }
            }
            _ => {
                return self.err(format!(
                    "expected an initialiser value, found {}",
                    self.describe()
                ))
            }
        };
        // A parenthesised constant expression is not emitted by LLVM; keep the
        // grammar honest by refusing it here rather than misreading it.
        Ok(elem)
    }

    /// `( .param … , … )` parameter or return lists.
    fn param_list(&mut self) -> PResult<Vec<VarDecl>> {
        self.expect_punct('(')?;
        let mut out = Vec::new();
        if self.eat_punct(')') {
            return Ok(out);
        }
        loop {
            out.extend(self.var_decl_list(Linkage::Internal, false)?);
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.expect_punct(',')?;
        }
    }

    fn triple(&mut self) -> PResult<[u32; 3]> {
        let mut v = [1u32; 3];
        v[0] = self.int()? as u32;
        for slot in v.iter_mut().skip(1) {
            if !self.eat_punct(',') {
                break;
            }
            *slot = self.int()? as u32;
        }
        Ok(v)
    }

    fn function(&mut self, linkage: Linkage) -> PResult<FuncDecl> {
        let (line, column) = self.here();
        let entry = self.is_dot(".entry");
        self.pos += 1;
        let rets = if !entry && self.is_punct('(') {
            self.param_list()?
        } else {
            Vec::new()
        };
        let name = self.ident()?;
        let params = if self.is_punct('(') {
            self.param_list()?
        } else {
            Vec::new()
        };
        let mut f = FuncDecl {
            entry,
            linkage,
            name,
            rets,
            params,
            body: None,
            maxntid: None,
            reqntid: None,
            reqnctapercluster: None,
            noreturn: false,
            line,
            column,
        };
        loop {
            match self.peek() {
                Some(Tok::Dot(d)) => {
                    let d = *d;
                    self.pos += 1;
                    match d {
                        ".noreturn" | ".explicitcluster" => f.noreturn |= d == ".noreturn",
                        ".maxntid" => f.maxntid = Some(self.triple()?),
                        ".reqntid" => f.reqntid = Some(self.triple()?),
                        ".reqnctapercluster" => f.reqnctapercluster = Some(self.triple()?),
                        ".minnctapersm" | ".maxnreg" | ".maxclusterrank" | ".blocksareclusters" => {
                            self.triple()?;
                        }
                        ".pragma" => {
                            self.pos -= 1;
                            self.skip_statement();
                        }
                        _ => {
                            self.pos -= 1;
                            return self
                                .err(format!("unexpected `{d}` in the header of `{}`", f.name));
                        }
                    }
                }
                Some(Tok::Punct(';')) => {
                    self.pos += 1;
                    return Ok(f);
                }
                Some(Tok::Punct('{')) => {
                    self.pos += 1;
                    f.body = Some(self.block_body()?);
                    return Ok(f);
                }
                _ => {
                    return self.err(format!(
                        "expected `{{` or `;` after the header of `{}`",
                        f.name
                    ))
                }
            }
        }
    }

    /// Statements up to and including the closing `}`.
    fn block_body(&mut self) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            let Some(tok) = self.peek() else {
                return self.err("unterminated function body (missing `}`)");
            };
            match tok {
                Tok::Punct('}') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Tok::Punct('{') => {
                    self.pos += 1;
                    out.push(Stmt::Block(self.block_body()?));
                }
                Tok::Punct(';') => self.pos += 1,
                Tok::Dot(d) => match *d {
                    ".loc" | ".file" => self.skip_line(),
                    ".pragma" | ".maxnreg" => self.skip_statement(),
                    ".reg" | ".local" | ".shared" | ".param" | ".const" | ".global" => {
                        for v in self.var_decl(Linkage::Internal)? {
                            out.push(Stmt::Decl(v));
                        }
                        self.expect_punct(';')?;
                    }
                    _ => return self.err(format!("unexpected directive `{d}` in a function body")),
                },
                Tok::Ident(name) if self.peek_at(1) == Some(&Tok::Punct(':')) => {
                    let (line, column) = self.here();
                    let name = name.to_string();
                    self.pos += 2;
                    if self.eat_dot(".branchtargets") {
                        let mut targets = vec![self.ident()?];
                        while self.eat_punct(',') {
                            targets.push(self.ident()?);
                        }
                        self.expect_punct(';')?;
                        out.push(Stmt::BranchTargets {
                            label: name,
                            targets,
                        });
                    } else if self.eat_dot(".callprototype") {
                        let rets = if self.is_punct('(') {
                            self.param_list()?
                        } else {
                            Vec::new()
                        };
                        // The prototype's own name is `_`.
                        self.ident()?;
                        let params = if self.is_punct('(') {
                            self.param_list()?
                        } else {
                            Vec::new()
                        };
                        while !self.is_punct(';') && self.peek().is_some() {
                            self.pos += 1; // `.noreturn` and similar attributes
                        }
                        self.expect_punct(';')?;
                        out.push(Stmt::CallPrototype {
                            label: name,
                            rets,
                            params,
                        });
                    } else {
                        out.push(Stmt::Label { name, line, column });
                    }
                }
                Tok::Ident(_) | Tok::Punct('@') => out.push(Stmt::Inst(self.instruction()?)),
                _ => {
                    return self.err(format!(
                        "expected an instruction, found {}",
                        self.describe()
                    ))
                }
            }
        }
    }

    fn instruction(&mut self) -> PResult<Inst> {
        let start = self.toks[self.pos].offset;
        let (line, column) = self.here();
        let guard = if self.eat_punct('@') {
            let neg = self.eat_punct('!');
            Some((self.ident()?, neg))
        } else {
            None
        };
        let opcode = self.ident()?;
        let mut mods = Vec::new();
        while let Some(Tok::Dot(d)) = self.peek() {
            mods.push(d[1..].to_string());
            self.pos += 1;
        }
        let mut operands = Vec::new();
        if !self.is_punct(';') {
            loop {
                operands.push(self.operand()?);
                if self.eat_punct(',') {
                    continue;
                }
                break;
            }
        }
        if !self.is_punct(';') {
            return self.err(format!(
                "expected `;` after `{opcode}`, found {}",
                self.describe()
            ));
        }
        let end = self.toks[self.pos].offset;
        self.pos += 1;
        let text_end = self.src[start..end].trim_end().len() + start;
        Ok(Inst {
            guard,
            opcode,
            mods,
            operands,
            span: (start, text_end),
            line,
            column,
        })
    }

    fn operand(&mut self) -> PResult<Operand> {
        let first = self.operand_single()?;
        if self.eat_punct('|') {
            let second = self.operand_single()?;
            return Ok(Operand::Pair(Box::new(first), Box::new(second)));
        }
        Ok(first)
    }

    fn operand_single(&mut self) -> PResult<Operand> {
        match self.peek() {
            Some(Tok::Punct('!')) => {
                self.pos += 1;
                Ok(Operand::Not(Box::new(self.operand_single()?)))
            }
            Some(Tok::Punct('-')) => {
                self.pos += 1;
                match self.next() {
                    Some(Tok::Int(v)) => Ok(Operand::Int(v.wrapping_neg())),
                    Some(Tok::F32(b)) => Ok(Operand::F32(b ^ 0x8000_0000)),
                    Some(Tok::F64(b)) => Ok(Operand::F64(b ^ (1 << 63))),
                    _ => {
                        self.pos -= 1;
                        self.err("expected a number after `-`")
                    }
                }
            }
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Operand::Int(*v))
            }
            Some(Tok::F32(b)) => {
                self.pos += 1;
                Ok(Operand::F32(*b))
            }
            Some(Tok::F64(b)) => {
                self.pos += 1;
                Ok(Operand::F64(*b))
            }
            Some(Tok::Ident(name)) => {
                let name = name.to_string();
                self.pos += 1;
                if let Some(Tok::Dot(comp)) = self.peek() {
                    let comp = comp[1..].to_string();
                    self.pos += 1;
                    return Ok(Operand::Component(name, comp));
                }
                if self.is_punct('+')
                    && matches!(self.peek_at(1), Some(Tok::Int(_)) | Some(Tok::Punct('-')))
                {
                    self.pos += 1;
                    let off = self.int()? as i64;
                    return Ok(Operand::SymbolOffset(name, off));
                }
                Ok(Operand::Name(name))
            }
            Some(Tok::Punct('[')) => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    items.push(self.address_part()?);
                    if self.eat_punct(']') {
                        break;
                    }
                    self.expect_punct(',')?;
                }
                if items.len() == 1 {
                    Ok(items.pop().unwrap_or(Operand::Int(0)))
                } else {
                    Ok(Operand::AddressList(items))
                }
            }
            Some(Tok::Punct('{')) => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat_punct('}') {
                    loop {
                        items.push(self.operand()?);
                        if self.eat_punct('}') {
                            break;
                        }
                        self.expect_punct(',')?;
                    }
                }
                Ok(Operand::Vector(items))
            }
            Some(Tok::Punct('(')) => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat_punct(')') {
                    loop {
                        items.push(self.operand()?);
                        if self.eat_punct(')') {
                            break;
                        }
                        self.expect_punct(',')?;
                    }
                }
                Ok(Operand::List(items))
            }
            _ => self.err(format!("expected an operand, found {}", self.describe())),
        }
    }

    /// One element inside `[ ]`: `base`, `base+off`, `base+-off`, `off`, or a
    /// vector of coordinates.
    fn address_part(&mut self) -> PResult<Operand> {
        match self.peek() {
            Some(Tok::Ident(_)) => {
                let base = self.ident()?;
                let mut offset = 0i64;
                loop {
                    if self.eat_punct('+') {
                        offset = offset.wrapping_add(self.int()? as i64);
                    } else if self.is_punct('-') && matches!(self.peek_at(1), Some(Tok::Int(_))) {
                        self.pos += 1;
                        offset = offset.wrapping_sub(self.int()? as i64);
                    } else {
                        break;
                    }
                }
                Ok(Operand::Address {
                    base: Some(base),
                    offset,
                })
            }
            Some(Tok::Int(_)) | Some(Tok::Punct('-')) => {
                let v = self.int()? as i64;
                Ok(Operand::Address {
                    base: None,
                    offset: v,
                })
            }
            _ => self.operand(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(src: &str) -> Vec<Stmt> {
        let m = parse_module(&format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() {{\n{src}\n}}"
        ))
        .unwrap();
        match m.items.into_iter().next() {
            Some(Item::Func(f)) => f.body.unwrap(),
            _ => panic!("no function"),
        }
    }

    #[test]
    fn instructions_and_operands() {
        let b = body("@!%p1 setp.eq.s32 %p2|%p3, %r1, -1, !%p4;\nld.param.b64 %rd1, [k_param_0+8];\nmov.u32 %r1, %tid.x;");
        let Stmt::Inst(i) = &b[0] else { panic!() };
        assert_eq!(i.guard, Some(("%p1".into(), true)));
        assert_eq!(i.opcode, "setp");
        assert_eq!(i.mods, vec!["eq", "s32"]);
        assert_eq!(
            i.operands,
            vec![
                Operand::Pair(
                    Box::new(Operand::Name("%p2".into())),
                    Box::new(Operand::Name("%p3".into()))
                ),
                Operand::Name("%r1".into()),
                Operand::Int(u64::MAX),
                Operand::Not(Box::new(Operand::Name("%p4".into()))),
            ]
        );
        let Stmt::Inst(i) = &b[1] else { panic!() };
        assert_eq!(
            i.operands[1],
            Operand::Address {
                base: Some("k_param_0".into()),
                offset: 8
            }
        );
        let Stmt::Inst(i) = &b[2] else { panic!() };
        assert_eq!(i.operands[1], Operand::Component("%tid".into(), "x".into()));
    }

    #[test]
    fn globals_with_initialisers() {
        let m = parse_module(
            ".global .align 1 .b8 s[3] = {1, 2, 3};\n.global .align 8 .u64 t[2] = {generic(s)+1, 5};\n.extern .shared .align 16 .b8 dyn[];",
        )
        .unwrap();
        let Item::Var(t) = &m.items[1] else { panic!() };
        assert_eq!(
            t.init.as_ref().unwrap()[0],
            InitElem::Symbol {
                name: "s".into(),
                offset: 1,
                generic: true
            }
        );
        let Item::Var(d) = &m.items[2] else { panic!() };
        assert_eq!((d.linkage, d.dims.clone()), (Linkage::Extern, vec![None]));
    }

    #[test]
    fn debug_info_is_skipped() {
        let m = parse_module(
            ".file 1 \"/a/b.rs\"\n.visible .entry k()\n{\n.loc 1 2 3\nret;\n}\n.section .debug_info\n{\n.b32 5\n.b8 1\n}\n",
        )
        .unwrap();
        assert_eq!(m.items.len(), 1);
    }

    #[test]
    fn call_sequences_and_prototypes() {
        let b = body(
            "{ .param .b32 param0; .param .b32 retval0;\nst.param.b32 [param0], %r4;\nprototype_36 : .callprototype (.param .b32 _) _ (.param .b32 _);\ncall (retval0), %rd35, (param0), prototype_36;\n}",
        );
        let Stmt::Block(inner) = &b[0] else { panic!() };
        assert!(matches!(&inner[3], Stmt::CallPrototype { label, .. } if label == "prototype_36"));
        let Stmt::Inst(call) = &inner[4] else {
            panic!()
        };
        assert_eq!(call.operands.len(), 4);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse_module(".visible .entry k()\n{\n  add.s32 %r1, %r2 %r3;\n}").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("expected `;`"), "{}", e.message);
    }
}
