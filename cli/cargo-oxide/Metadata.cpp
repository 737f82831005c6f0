//===- Metadata.cpp - the project as `cargo metadata` describes it --------===//
//
// Part of oxide. See Metadata.h.
//
//===----------------------------------------------------------------------===//

#include "Metadata.h"
#include "Cargo.h"

#include <cstdio>
#include <cstdlib>

namespace oxide::cli {

const JsonValue *JsonValue::get(std::string_view Key) const {
  for (const JsonValue &Member : Members)
    if (Member.Key == Key)
      return &Member;
  return nullptr;
}

std::optional<std::string> JsonValue::string() const {
  if (Type != Kind::String)
    return std::nullopt;
  return Text;
}

namespace {

class JsonReader {
public:
  explicit JsonReader(std::string_view Text) : Text(Text) {}

  Expected<JsonValue> document() {
    JsonValue V;
    if (!value(V, 0))
      return failure();
    skipSpace();
    if (Pos != Text.size()) {
      Problem = "text after the JSON value";
      return failure();
    }
    return V;
  }

private:
  std::string_view Text;
  size_t Pos = 0;
  std::string Problem;

  Error failure() const {
    return Error{"cannot read cargo's JSON: " + Problem + " at offset " +
                     std::to_string(Pos),
                 "this is a bug in oxide; --verbose shows the cargo command"};
  }

  void skipSpace() {
    while (Pos < Text.size() && (Text[Pos] == ' ' || Text[Pos] == '\n' ||
                                 Text[Pos] == '\r' || Text[Pos] == '\t'))
      ++Pos;
  }

  bool literal(std::string_view Word) {
    if (Text.substr(Pos, Word.size()) != Word) {
      Problem = "unexpected character";
      return false;
    }
    Pos += Word.size();
    return true;
  }

  static void appendUtf8(std::string &Out, unsigned Code) {
    if (Code < 0x80) {
      Out += static_cast<char>(Code);
    } else if (Code < 0x800) {
      Out += static_cast<char>(0xC0 | (Code >> 6));
      Out += static_cast<char>(0x80 | (Code & 0x3F));
    } else if (Code < 0x10000) {
      Out += static_cast<char>(0xE0 | (Code >> 12));
      Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
      Out += static_cast<char>(0x80 | (Code & 0x3F));
    } else {
      Out += static_cast<char>(0xF0 | (Code >> 18));
      Out += static_cast<char>(0x80 | ((Code >> 12) & 0x3F));
      Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
      Out += static_cast<char>(0x80 | (Code & 0x3F));
    }
  }

  bool hex4(unsigned &Code) {
    if (Pos + 4 > Text.size()) {
      Problem = "short \\u escape";
      return false;
    }
    Code = 0;
    for (int I = 0; I < 4; ++I) {
      char C = Text[Pos++];
      Code <<= 4;
      if (C >= '0' && C <= '9')
        Code |= C - '0';
      else if (C >= 'a' && C <= 'f')
        Code |= C - 'a' + 10;
      else if (C >= 'A' && C <= 'F')
        Code |= C - 'A' + 10;
      else {
        Problem = "bad \\u escape";
        return false;
      }
    }
    return true;
  }

  bool string(std::string &Out) {
    ++Pos; // the opening quote
    while (Pos < Text.size()) {
      char C = Text[Pos++];
      if (C == '"')
        return true;
      if (C != '\\') {
        Out += C;
        continue;
      }
      if (Pos >= Text.size())
        break;
      char E = Text[Pos++];
      switch (E) {
      case 'n': Out += '\n'; break;
      case 't': Out += '\t'; break;
      case 'r': Out += '\r'; break;
      case 'b': Out += '\b'; break;
      case 'f': Out += '\f'; break;
      case 'u': {
        unsigned Code;
        if (!hex4(Code))
          return false;
        if (Code >= 0xD800 && Code < 0xDC00 && Text.substr(Pos, 2) == "\\u") {
          Pos += 2;
          unsigned Low;
          if (!hex4(Low))
            return false;
          Code = 0x10000 + ((Code - 0xD800) << 10) + (Low - 0xDC00);
        }
        appendUtf8(Out, Code);
        break;
      }
      default: Out += E; break; // \" \\ \/
      }
    }
    Problem = "unterminated string";
    return false;
  }

  bool value(JsonValue &V, int Depth) {
    if (Depth > 64) {
      Problem = "nesting too deep";
      return false;
    }
    skipSpace();
    if (Pos >= Text.size()) {
      Problem = "unexpected end";
      return false;
    }
    char C = Text[Pos];
    if (C == '"') {
      V.Type = JsonValue::Kind::String;
      return string(V.Text);
    }
    if (C == '{') {
      V.Type = JsonValue::Kind::Object;
      ++Pos;
      skipSpace();
      if (Pos < Text.size() && Text[Pos] == '}') {
        ++Pos;
        return true;
      }
      for (;;) {
        skipSpace();
        if (Pos >= Text.size() || Text[Pos] != '"') {
          Problem = "expected a member name";
          return false;
        }
        std::string Key;
        if (!string(Key))
          return false;
        skipSpace();
        if (!literal(":"))
          return false;
        JsonValue Member;
        if (!value(Member, Depth + 1))
          return false;
        Member.Key = std::move(Key);
        V.Members.push_back(std::move(Member));
        skipSpace();
        if (Pos < Text.size() && Text[Pos] == ',') {
          ++Pos;
          continue;
        }
        return literal("}");
      }
    }
    if (C == '[') {
      V.Type = JsonValue::Kind::Array;
      ++Pos;
      skipSpace();
      if (Pos < Text.size() && Text[Pos] == ']') {
        ++Pos;
        return true;
      }
      for (;;) {
        JsonValue Item;
        if (!value(Item, Depth + 1))
          return false;
        V.Items.push_back(std::move(Item));
        skipSpace();
        if (Pos < Text.size() && Text[Pos] == ',') {
          ++Pos;
          continue;
        }
        return literal("]");
      }
    }
    if (C == 't') {
      V.Type = JsonValue::Kind::Bool;
      V.Bool = true;
      return literal("true");
    }
    if (C == 'f') {
      V.Type = JsonValue::Kind::Bool;
      return literal("false");
    }
    if (C == 'n')
      return literal("null");
    size_t Start = Pos;
    while (Pos < Text.size() &&
           std::string_view("+-0123456789.eE").find(Text[Pos]) !=
               std::string_view::npos)
      ++Pos;
    if (Pos == Start) {
      Problem = "unexpected character";
      return false;
    }
    V.Type = JsonValue::Kind::Number;
    V.Number = std::strtod(std::string(Text.substr(Start, Pos - Start)).c_str(),
                           nullptr);
    return true;
  }
};

} // namespace

Expected<JsonValue> parseJson(std::string_view Text) {
  return JsonReader(Text).document();
}

std::string jsonQuote(std::string_view Text) {
  std::string Out = "\"";
  for (char C : Text) {
    switch (C) {
    case '"': Out += "\\\""; break;
    case '\\': Out += "\\\\"; break;
    case '\n': Out += "\\n"; break;
    case '\t': Out += "\\t"; break;
    case '\r': Out += "\\r"; break;
    default:
      if (static_cast<unsigned char>(C) < 0x20) {
        char Buffer[8];
        std::snprintf(Buffer, sizeof(Buffer), "\\u%04x", C);
        Out += Buffer;
      } else {
        Out += C;
      }
    }
  }
  return Out + "\"";
}

std::string toJson(const JsonValue &Value) {
  switch (Value.Type) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return Value.Bool ? "true" : "false";
  case JsonValue::Kind::Number: {
    char Buffer[32];
    std::snprintf(Buffer, sizeof(Buffer), "%.17g", Value.Number);
    return Buffer;
  }
  case JsonValue::Kind::String:
    return jsonQuote(Value.Text);
  case JsonValue::Kind::Array: {
    std::string Out = "[";
    for (const JsonValue &Item : Value.Items)
      Out += (Out.size() > 1 ? "," : "") + toJson(Item);
    return Out + "]";
  }
  case JsonValue::Kind::Object: {
    std::string Out = "{";
    for (const JsonValue &Member : Value.Members)
      Out += (Out.size() > 1 ? "," : "") + jsonQuote(Member.Key) + ":" +
             toJson(Member);
    return Out + "}";
  }
  }
  return "null";
}

const PackageMetadata *
ProjectMetadata::package(const fs::path &ManifestPath) const {
  std::error_code EC;
  for (const PackageMetadata &Pkg : Packages)
    if (Pkg.ManifestPath == ManifestPath ||
        fs::equivalent(Pkg.ManifestPath, ManifestPath, EC))
      return &Pkg;
  return nullptr;
}

Expected<ProjectMetadata> parseCargoMetadata(std::string_view Json) {
  Expected<JsonValue> Doc = parseJson(Json);
  if (!Doc)
    return Doc.error();
  auto Missing = [](std::string_view What) {
    return Error{"`cargo metadata` printed no " + std::string(What),
                 "is this cargo older than 1.40? `cargo oxide doctor` checks "
                 "the toolchain"};
  };
  ProjectMetadata Project;
  const JsonValue *Root = Doc->get("workspace_root");
  const JsonValue *Target = Doc->get("target_directory");
  const JsonValue *Packages = Doc->get("packages");
  if (!Root || !Root->string() || !Target || !Target->string())
    return Missing("workspace_root or target_directory");
  if (!Packages || Packages->Type != JsonValue::Kind::Array)
    return Missing("packages");
  Project.WorkspaceRoot = *Root->string();
  Project.TargetDirectory = *Target->string();
  for (const JsonValue &P : Packages->Items) {
    PackageMetadata Pkg;
    if (const JsonValue *Name = P.get("name"))
      Pkg.Name = Name->string().value_or("");
    if (const JsonValue *Path = P.get("manifest_path"))
      Pkg.ManifestPath = Path->string().value_or("");
    if (const JsonValue *Run = P.get("default_run"))
      Pkg.DefaultRun = Run->string();
    if (const JsonValue *Meta = P.get("metadata"))
      if (const JsonValue *Oxide = Meta->get("oxide")) {
        if (const JsonValue *Arch = Oxide->get("arch"))
          Pkg.OxideArch = Arch->string();
        if (const JsonValue *Emulate = Oxide->get("emulate"))
          Pkg.OxideEmulate = Emulate->string();
      }
    if (const JsonValue *Targets = P.get("targets"))
      for (const JsonValue &T : Targets->Items) {
        const JsonValue *Kinds = T.get("kind");
        const JsonValue *Name = T.get("name");
        if (!Kinds || !Name || !Name->string())
          continue;
        for (const JsonValue &Kind : Kinds->Items)
          if (Kind.string() == "bin")
            Pkg.Binaries.push_back(*Name->string());
      }
    Project.Packages.push_back(std::move(Pkg));
  }
  return Project;
}

std::vector<std::string> cargoMetadataArgs(const fs::path &ManifestPath) {
  return {"metadata", "--format-version", "1", "--no-deps",
          "--manifest-path", ManifestPath.string()};
}

Expected<ProjectMetadata> readCargoMetadata(const Environment &Env,
                                            const fs::path &Cwd,
                                            const fs::path &ManifestPath) {
  std::vector<std::string> Argv = {cargoProgram(Env)};
  std::vector<std::string> Args = cargoMetadataArgs(ManifestPath);
  Argv.insert(Argv.end(), Args.begin(), Args.end());
  RunOptions Options;
  Options.Env = &Env;
  Options.CaptureStdout = true; // cargo's errors go to the terminal
  // cargo finds .cargo/config.toml from the directory it runs in.
  Options.WorkingDir = Cwd;
  ProcessResult Result = runProcess(Argv, Options);
  if (!Result.succeeded())
    return cargoFailure("cargo metadata", Result);
  return parseCargoMetadata(Result.Output);
}

} // namespace oxide::cli
