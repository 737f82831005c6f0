//===- PanicArguments.h - What a panic's fmt::Arguments say -----*- C++ -*-===//
//
// `panic!("{} > {:#x}", a, b)` reaches `core::panicking::panic_fmt` with a
// `fmt::Arguments`: a template (Rust 1.9x encodes it as bytes, below) and an
// array of `rt::Argument`s, each the address of a value and the `fmt` method
// that would print it (`<u32 as Display>::fmt`). The GPU cannot run those
// methods; LowerPanics reads the values itself and lets the host format
// them. This is how it reads what rustc wrote:
//   * decodeFormatTemplate: the template's literal pieces and placeholders,
//     with their options (fill, alignment, sign, `#`, `0`, width, precision);
//   * readArgumentSlot: what the stores before the panic left in element I
//     of the argument array, following the copies and calls that fill it in
//     an unoptimised build (`rt::Argument::new_display(sret, &x)`) and the
//     stores an optimised one inlines;
//   * valueFormatOf: which trait a `fmt` method implements for which
//     printable type (integers, floats, bool, char, through references).
//===----------------------------------------------------------------------===//
#ifndef OXIDE_LIB_PANICARGUMENTS_H
#define OXIDE_LIB_PANICARGUMENTS_H

#include "oxide/PanicRecord.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class Function;
class Instruction;
class Value;
} // namespace llvm

namespace oxide {

/// The bits of a placeholder's options word (rustc's `FormattingOptions`),
/// as Rust 1.95 and 1.97 encode them.
namespace fmt_options {
constexpr uint32_t FillMask = 0x1FFFFF; ///< the fill character
constexpr uint32_t SignPlus = 1u << 21, SignMinus = 1u << 22, Alternate = 1u << 23,
                   ZeroPad = 1u << 24, DebugLowerHex = 1u << 25, DebugUpperHex = 1u << 26,
                   HasWidth = 1u << 27, HasPrecision = 1u << 28;
constexpr unsigned AlignShift = 29; ///< 2 bits: 0 left, 1 right, 2 center, 3 none
constexpr uint32_t AlignNone = 3;
/// A placeholder without an options field: `{}`.
constexpr uint32_t Default = ' ' | AlignNone << AlignShift;
} // namespace fmt_options

/// One `{…}` of a template.
struct Placeholder {
  unsigned Arg = 0;                        ///< which rt::Argument it prints
  uint32_t Options = fmt_options::Default; ///< fmt_options bits
  uint16_t Width = 0, Precision = 0;       ///< when Options says it has them
  bool WidthIsArg = false;                 ///< Width is the index of a usize argument (`{:w$}`)
  bool PrecisionIsArg = false;             ///< likewise Precision (`{:.*}`)
};

/// A decoded template: literal text and placeholders, in order.
struct TemplatePart {
  std::string Text;                 ///< when Value is empty
  std::optional<Placeholder> Value;
};

/// Decodes the bytes of a `format_args!` template: length-prefixed literal
/// pieces (a byte < 0x80, or 0x80 and a 16-bit length) and placeholders (a
/// byte 0b11xxxxxx whose low bits say which fields follow: options (32 bits),
/// width, precision, argument index (16 bits each); bits 4 and 5 make the
/// width and precision argument indices), ended by a zero byte. An argument
/// index left out is the previous placeholder's plus one. None if the bytes
/// are not such a template.
std::optional<std::vector<TemplatePart>> decodeFormatTemplate(llvm::StringRef Bytes);

/// What a `fmt` method prints: the trait (`Display`, `Debug`, `LowerHex`,
/// `UpperHex`, `Octal`, `Binary`, `LowerExp`, `UpperExp`), the kind of value,
/// and how many references lead to it from the address the rt::Argument
/// holds (`<&u32 as Display>::fmt`: one).
struct ValueFormat {
  std::string Trait;
  panic_record::ValueKind Kind = panic_record::ValueKind::None;
  unsigned Derefs = 0;
};

/// The format of a `fmt` method of a printable type, or None. `<&T as
/// Display>::fmt` (legacy names keep the `T`) is read through its body: the
/// method it forwards to.
std::optional<ValueFormat> valueFormatOf(const llvm::Function &Method);

/// Element I of an rt::Argument array: the value's address and its `fmt`
/// method, or, for a width or precision argument (`rt::Argument::from_usize`),
/// the address of the usize.
struct ArgumentSlot {
  llvm::Value *Address = nullptr;
  llvm::Function *Method = nullptr; ///< null for a count
  bool IsCount = false;
};

/// What the code before the panic call `Panic` stored into element I of the
/// argument array `Args` (an alloca of the function that panics). The values
/// it returns are that function's own (arguments, allocas, loads); None
/// where the stores do not say it plainly (one write of each field).
std::optional<ArgumentSlot> readArgumentSlot(llvm::Value *Args, unsigned I,
                                             const llvm::Instruction *Panic);

} // namespace oxide

#endif
