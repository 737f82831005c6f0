//===- PanicFunctions.cpp - Recognising Rust's panic entry points ---------===//
//
// See PanicFunctions.h: PanicFunctions.def, read as a table, and the rule for
// core's helpers that the table does not list.
//===----------------------------------------------------------------------===//
#include "oxide/PanicFunctions.h"

using namespace llvm;
using namespace oxide;

namespace {

const PanicFunction PanicTable[] = {
#define OXIDE_PANIC(PREFIX, MESSAGE, LOCATION, ARGS, STRING)                                     \
  {PREFIX, MESSAGE, PanicLocationArg::LOCATION, ARGS, STRING},
#include "oxide/PanicFunctions.def"
#undef OXIDE_PANIC
};

/// core's other non-generic panic helpers: no location argument that can be
/// relied on; the message is the helper's name.
const PanicFunction CorePanicHelper = {"", "", PanicLocationArg::None, "", -1};

} // namespace

const PanicFunction *oxide::findPanicFunction(StringRef Path, bool IsDeclaration) {
  for (const PanicFunction &P : PanicTable)
    if (Path.starts_with(P.Prefix))
      return &P;
  StringRef Last = Path.rsplit("::").second;
  if (IsDeclaration && Path.starts_with("core::") && Last.contains("panic"))
    return &CorePanicHelper;
  return nullptr;
}
