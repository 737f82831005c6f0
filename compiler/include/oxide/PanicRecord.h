//===- PanicRecord.h - The panic record's layout ----------------*- C++ -*-===//
//
// One constant per row of PanicRecord.def: the byte offset of each field of
// the record a panicking thread fills for the host (docs/ABI.md §5), the
// record's numbers, and the kinds of the values it carries.
//===----------------------------------------------------------------------===//
#ifndef OXIDE_PANICRECORD_H
#define OXIDE_PANICRECORD_H

#include <cstdint>

namespace oxide::panic_record {

#define OXIDE_PANIC_RECORD_FIELD(NAME, OFFSET, SIZE, DOC) inline constexpr uint64_t NAME = OFFSET;
#define OXIDE_PANIC_RECORD_VALUE(NAME, VALUE, DOC) inline constexpr uint64_t NAME = VALUE;
#include "oxide/PanicRecord.def"

/// The type of a formatted value in the record (`Kinds`).
enum class ValueKind : uint8_t {
  None = 0,
#define OXIDE_PANIC_VALUE_KIND(NAME, CODE, TYPE) NAME = CODE,
#include "oxide/PanicRecord.def"
};

} // namespace oxide::panic_record

#endif
