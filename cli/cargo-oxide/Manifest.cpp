//===- Manifest.cpp - the parts of Cargo.toml cargo-oxide reads -----------===//
//
// Part of oxide. See Manifest.h.
//
// The reader walks the text once. At the start of each statement it sees a
// comment, a table header (`[a.b]`, `[[bin]]`) or a `key = value` pair. Keys
// are reduced to a dotted path relative to the document root, so
// `[package] name = "x"` and a top-level `package.name = "x"` look the same.
// Values we want are strings; everything else is skipped by matching its
// brackets and braces while stepping over strings.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include <fstream>
#include <sstream>

namespace oxide::cli {

namespace {

class ManifestReader {
public:
  explicit ManifestReader(std::string_view Text) : Text(Text) {}

  Expected<Manifest> read();

private:
  std::string_view Text;
  size_t Pos = 0;
  unsigned Line = 1;
  std::optional<Error> Failure;

  std::vector<std::string> TablePath;
  bool InBinArray = false; // the current table is a [[bin]] entry
  bool BinHasName = false; // …and its name has been recorded
  Manifest Result;

  bool atEnd() const { return Pos >= Text.size(); }
  char peek(size_t Ahead = 0) const {
    return Pos + Ahead < Text.size() ? Text[Pos + Ahead] : '\0';
  }
  bool startsWith(std::string_view S) const {
    return Text.substr(Pos, S.size()) == S;
  }
  void advance(size_t N = 1) {
    for (size_t K = 0; K < N && !atEnd(); ++K, ++Pos)
      if (Text[Pos] == '\n')
        ++Line;
  }
  void fail(const std::string &Message) {
    if (!Failure)
      Failure = Error{"line " + std::to_string(Line) + ": " + Message,
                      "fix the TOML syntax; `cargo metadata` shows cargo's "
                      "own diagnosis"};
  }

  void skipBlanks() { // spaces and tabs, not newlines
    while (!atEnd() && (peek() == ' ' || peek() == '\t'))
      advance();
  }
  void skipToLineEnd() {
    while (!atEnd() && peek() != '\n')
      advance();
  }
  void skipWhitespaceAndComments() {
    for (;;) {
      while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                          peek() == '\r'))
        advance();
      if (peek() == '#') {
        skipToLineEnd();
        continue;
      }
      return;
    }
  }

  std::optional<std::string> readString();
  std::optional<std::string> readKeyPart();
  std::optional<std::vector<std::string>> readDottedKey(char Terminator);
  void skipValue();
  std::optional<std::vector<std::string>> readStringArray();
  void readHeader();
  void readKeyValue();
  void record(const std::vector<std::string> &Path,
              const std::optional<std::string> &Value);
};

/// Reads a TOML string at Pos: basic, literal, or either multi-line form.
std::optional<std::string> ManifestReader::readString() {
  char Quote = peek();
  bool Multi = peek(1) == Quote && peek(2) == Quote;
  bool Literal = Quote == '\'';
  advance(Multi ? 3 : 1);
  if (Multi && peek() == '\n') // a newline right after the opening is dropped
    advance();
  else if (Multi && peek() == '\r' && peek(1) == '\n')
    advance(2);
  std::string Value;
  for (;;) {
    if (atEnd() || (!Multi && peek() == '\n')) {
      fail("unterminated string");
      return std::nullopt;
    }
    char C = peek();
    if (C == Quote && (!Multi || (peek(1) == Quote && peek(2) == Quote))) {
      advance(Multi ? 3 : 1);
      // TOML allows up to two extra quotes right before the closing three.
      while (Multi && peek() == Quote) {
        Value += Quote;
        advance();
      }
      return Value;
    }
    if (C == '\\' && !Literal) {
      char E = peek(1);
      advance(2);
      switch (E) {
      case 'n':
        Value += '\n';
        break;
      case 't':
        Value += '\t';
        break;
      case 'r':
        Value += '\r';
        break;
      case 'b':
        Value += '\b';
        break;
      case 'f':
        Value += '\f';
        break;
      case '"':
        Value += '"';
        break;
      case '\\':
        Value += '\\';
        break;
      case 'u':
      case 'U': {
        // Keep the escape as written: package names and paths we read are
        // ASCII, and no decision depends on what a \u escape decodes to.
        Value += '\\';
        Value += E;
        break;
      }
      default:
        if (Multi && (E == '\n' || E == ' ' || E == '\t' || E == '\r')) {
          // Line-ending backslash: trim the following whitespace.
          while (!atEnd() && (peek() == ' ' || peek() == '\t' ||
                              peek() == '\n' || peek() == '\r'))
            advance();
        } else {
          Value += E;
        }
      }
      continue;
    }
    Value += C;
    advance();
  }
}

/// A bare or quoted key segment.
std::optional<std::string> ManifestReader::readKeyPart() {
  skipBlanks();
  if (peek() == '"' || peek() == '\'')
    return readString();
  std::string Part;
  while (!atEnd()) {
    char C = peek();
    bool Bare = (C >= 'a' && C <= 'z') || (C >= 'A' && C <= 'Z') ||
                (C >= '0' && C <= '9') || C == '-' || C == '_';
    if (!Bare)
      break;
    Part += C;
    advance();
  }
  if (Part.empty()) {
    fail("expected a key");
    return std::nullopt;
  }
  return Part;
}

/// `a.b."c d"` up to (not including) \p Terminator.
std::optional<std::vector<std::string>>
ManifestReader::readDottedKey(char Terminator) {
  std::vector<std::string> Parts;
  for (;;) {
    auto Part = readKeyPart();
    if (!Part)
      return std::nullopt;
    Parts.push_back(*Part);
    skipBlanks();
    if (peek() == '.') {
      advance();
      continue;
    }
    if (peek() == Terminator)
      return Parts;
    fail(std::string("expected '") + Terminator + "' after a key");
    return std::nullopt;
  }
}

/// Skips a value that is not a plain string: arrays and inline tables may span
/// lines and contain strings with brackets or '#'.
void ManifestReader::skipValue() {
  int Depth = 0;
  while (!atEnd()) {
    char C = peek();
    if (C == '"' || C == '\'') {
      if (!readString())
        return;
      continue;
    }
    if (C == '#') { // comments are allowed between array elements
      skipToLineEnd();
      continue;
    }
    if (C == '[' || C == '{')
      ++Depth;
    else if (C == ']' || C == '}')
      --Depth;
    else if (C == '\n' && Depth <= 0)
      return;
    advance();
    if (Depth < 0) {
      fail("unbalanced brackets");
      return;
    }
  }
  if (Depth > 0)
    fail("unterminated array or inline table");
}

/// `["a", 'b', ]` with comments and newlines anywhere between elements.
std::optional<std::vector<std::string>> ManifestReader::readStringArray() {
  std::vector<std::string> Items;
  advance(); // '['
  for (;;) {
    skipWhitespaceAndComments();
    if (peek() == ']') {
      advance();
      return Items;
    }
    if (peek() != '"' && peek() != '\'') {
      fail("expected a string in the array");
      return std::nullopt;
    }
    auto Item = readString();
    if (!Item)
      return std::nullopt;
    Items.push_back(std::move(*Item));
    skipWhitespaceAndComments();
    if (peek() == ',') {
      advance();
      continue;
    }
    if (peek() != ']') {
      fail("expected ',' or ']' in the array");
      return std::nullopt;
    }
  }
}

void ManifestReader::readHeader() {
  bool ArrayOfTables = startsWith("[[");
  advance(ArrayOfTables ? 2 : 1);
  auto Path = readDottedKey(']');
  if (!Path)
    return;
  advance(ArrayOfTables ? 2 : 1);
  if (ArrayOfTables && Text[Pos - 1] != ']') {
    fail("expected ']]'");
    return;
  }
  TablePath = *Path;
  InBinArray = ArrayOfTables && TablePath.size() == 1 && TablePath[0] == "bin";
  BinHasName = false;
  record(TablePath, std::nullopt);
}

void ManifestReader::readKeyValue() {
  auto Key = readDottedKey('=');
  if (!Key)
    return;
  advance(); // '='
  skipBlanks();
  std::vector<std::string> Path = TablePath;
  Path.insert(Path.end(), Key->begin(), Key->end());
  bool MemberList = Path.size() == 2 && Path[0] == "workspace" &&
                    (Path[1] == "members" || Path[1] == "exclude");
  if (peek() == '"' || peek() == '\'') {
    auto Value = readString();
    if (!Value)
      return;
    record(Path, Value);
  } else if (MemberList && peek() == '[') {
    auto Items = readStringArray();
    if (!Items)
      return;
    record(Path, std::nullopt);
    (Path[1] == "members" ? Result.WorkspaceMembers : Result.WorkspaceExclude) =
        std::move(*Items);
  } else {
    size_t Start = Pos;
    skipValue();
    std::string_view Raw = Text.substr(Start, Pos - Start);
    // Booleans are the only other values we look at (package.autobins).
    while (!Raw.empty() &&
           (Raw.back() == ' ' || Raw.back() == '\t' || Raw.back() == '\r'))
      Raw.remove_suffix(1);
    size_t Hash = Raw.find('#');
    if (Hash != std::string_view::npos) {
      Raw = Raw.substr(0, Hash);
      while (!Raw.empty() && (Raw.back() == ' ' || Raw.back() == '\t'))
        Raw.remove_suffix(1);
    }
    record(Path, std::string(Raw));
  }
}

void ManifestReader::record(const std::vector<std::string> &Path,
                            const std::optional<std::string> &Value) {
  if (Path.empty())
    return;
  const std::string &Top = Path[0];
  if (Top == "workspace")
    Result.HasWorkspace = true;
  if (Top == "package")
    Result.HasPackage = true;
  if (Top == "lib")
    Result.HasLibTable = true;
  if (!Value)
    return;
  if (Path.size() == 2 && Top == "package") {
    if (Path[1] == "name")
      Result.PackageName = *Value;
    else if (Path[1] == "default-run")
      Result.DefaultRun = *Value;
    else if (Path[1] == "autobins")
      Result.AutoBins = *Value != "false";
  }
  if (Path.size() == 4 && Top == "package" && Path[1] == "metadata" &&
      Path[2] == "oxide" && Path[3] == "arch")
    Result.OxideArch = *Value;
  if (Path.size() == 4 && Top == "package" && Path[1] == "metadata" &&
      Path[2] == "oxide" && Path[3] == "emulate")
    Result.OxideEmulate = *Value;
  if (InBinArray && Path.size() == 2 && Top == "bin" && Path[1] == "name" &&
      !BinHasName) {
    Result.BinNames.push_back(*Value);
    BinHasName = true;
  }
}

Expected<Manifest> ManifestReader::read() {
  while (!Failure) {
    skipWhitespaceAndComments();
    if (atEnd())
      break;
    if (peek() == '[')
      readHeader();
    else
      readKeyValue();
    if (Failure)
      break;
    // The rest of the line may hold only a comment.
    skipBlanks();
    if (peek() == '#')
      skipToLineEnd();
    if (!atEnd() && peek() != '\n' && peek() != '\r')
      fail("unexpected text after a value");
  }
  if (Failure)
    return *Failure;
  return Result;
}

} // namespace

Expected<Manifest> parseManifest(std::string_view Text) {
  return ManifestReader(Text).read();
}

Expected<Manifest> readManifest(const std::filesystem::path &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    return Error{"cannot read " + Path.string(),
                 "check that the file exists and is readable"};
  std::ostringstream Buffer;
  Buffer << In.rdbuf();
  Expected<Manifest> Parsed = parseManifest(Buffer.str());
  if (!Parsed)
    return Error{Path.string() + ": " + Parsed.error().Message,
                 Parsed.error().Hint};
  return Parsed;
}

std::string crateNameOf(std::string_view PackageName) {
  std::string Name(PackageName);
  for (char &C : Name)
    if (C == '-')
      C = '_';
  return Name;
}

} // namespace oxide::cli
