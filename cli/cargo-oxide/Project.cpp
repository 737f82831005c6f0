//===- Project.cpp - workspaces, examples and packages --------------------===//
//
// Part of oxide. See Project.h.
//
//===----------------------------------------------------------------------===//

#include "Project.h"

#include <algorithm>

namespace oxide::cli {

namespace {

bool sameCrateName(std::string_view A, std::string_view B) {
  return crateNameOf(A) == crateNameOf(B);
}

/// Whether \p Dir is \p Ancestor or below it (both already canonical).
bool isWithin(const fs::path &Dir, const fs::path &Ancestor) {
  auto [AncestorEnd, DirIt] =
      std::mismatch(Ancestor.begin(), Ancestor.end(), Dir.begin(), Dir.end());
  return AncestorEnd == Ancestor.end();
}

fs::path canonicalOr(const fs::path &P) {
  std::error_code EC;
  fs::path C = fs::weakly_canonical(P, EC);
  return EC ? fs::absolute(P) : C;
}

} // namespace

std::vector<std::string> Package::binaries() const {
  std::vector<std::string> Names = Info.BinNames;
  auto Add = [&](const std::string &Name) {
    if (std::find(Names.begin(), Names.end(), Name) == Names.end())
      Names.push_back(Name);
  };
  if (!Info.AutoBins)
    return Names;
  std::error_code EC;
  if (fs::is_regular_file(Dir / "src" / "main.rs", EC))
    Add(Info.PackageName);
  std::vector<std::string> Found;
  for (fs::directory_iterator It(Dir / "src" / "bin", EC), End;
       !EC && It != End; It.increment(EC)) {
    const fs::path &P = It->path();
    if (It->is_regular_file(EC) && P.extension() == ".rs")
      Found.push_back(P.stem().string());
    else if (It->is_directory(EC) && fs::is_regular_file(P / "main.rs", EC))
      Found.push_back(P.filename().string());
  }
  std::sort(Found.begin(), Found.end());
  for (const std::string &Name : Found)
    Add(Name);
  return Names;
}

Expected<std::string> Package::defaultBinary() const {
  if (Info.DefaultRun)
    return *Info.DefaultRun;
  std::vector<std::string> Bins = binaries();
  if (Bins.size() == 1)
    return Bins.front();
  if (Bins.empty())
    return Error{"package `" + name() + "` has no binary to run",
                 "add src/main.rs (kernels and the host code that launches "
                 "them) to " +
                     Dir.string()};
  std::string List;
  for (const std::string &B : Bins)
    List += (List.empty() ? "" : ", ") + B;
  return Error{"package `" + name() + "` has several binaries (" + List + ")",
               "set `default-run = \"" + Bins.front() +
                   "\"` in the [package] "
                   "table of " +
                   ManifestPath.string()};
}

Expected<Package> loadPackage(const fs::path &Dir) {
  Package Pkg;
  Pkg.Dir = Dir;
  Pkg.ManifestPath = Dir / "Cargo.toml";
  Expected<Manifest> Info = readManifest(Pkg.ManifestPath);
  if (!Info)
    return Info.error();
  if (!Info->HasPackage || Info->PackageName.empty())
    return Error{Pkg.ManifestPath.string() + " has no [package] name",
                 "a package's Cargo.toml needs `[package]` with `name = "
                 "\"...\"`"};
  Pkg.Info = std::move(*Info);
  return Pkg;
}

Expected<Workspace> findWorkspace(const fs::path &Start) {
  fs::path Dir = canonicalOr(Start);
  std::optional<Workspace> NearestPackage;
  std::error_code EC;
  for (;;) {
    fs::path Candidate = Dir / "Cargo.toml";
    if (fs::is_regular_file(Candidate, EC)) {
      Expected<Manifest> Info = readManifest(Candidate);
      if (!Info)
        return Info.error();
      if (Info->HasWorkspace)
        return Workspace{Dir, Candidate, std::move(*Info)};
      if (Info->HasPackage && !NearestPackage)
        NearestPackage = Workspace{Dir, Candidate, std::move(*Info)};
    }
    if (!Dir.has_parent_path() || Dir.parent_path() == Dir)
      break;
    Dir = Dir.parent_path();
  }
  if (NearestPackage)
    return std::move(*NearestPackage);
  return Error{"could not find Cargo.toml in " + canonicalOr(Start).string() +
                   " or any parent directory",
               "run this inside an oxide workspace or package, or create one "
               "with `cargo oxide new NAME`"};
}

std::vector<Package> listExamples(const fs::path &Root) {
  std::vector<Package> Examples;
  std::error_code EC;
  for (fs::directory_iterator It(Root / "examples", EC), End; !EC && It != End;
       It.increment(EC)) {
    if (!It->is_directory(EC) ||
        !fs::is_regular_file(It->path() / "Cargo.toml", EC))
      continue;
    Expected<Package> Pkg = loadPackage(It->path());
    if (Pkg)
      Examples.push_back(std::move(*Pkg));
  }
  std::sort(Examples.begin(), Examples.end(),
            [](const Package &A, const Package &B) {
              return A.Dir.filename() < B.Dir.filename();
            });
  return Examples;
}

bool globMatch(std::string_view Pattern, std::string_view Name) {
  // Iterative wildcard matching with one backtrack point for the last '*'.
  size_t P = 0, N = 0, StarP = std::string_view::npos, StarN = 0;
  while (N < Name.size()) {
    if (P < Pattern.size() && (Pattern[P] == '?' || Pattern[P] == Name[N])) {
      ++P;
      ++N;
    } else if (P < Pattern.size() && Pattern[P] == '*') {
      StarP = P++;
      StarN = N;
    } else if (StarP != std::string_view::npos) {
      P = StarP + 1;
      N = ++StarN;
    } else {
      return false;
    }
  }
  while (P < Pattern.size() && Pattern[P] == '*')
    ++P;
  return P == Pattern.size();
}

namespace {

/// Appends to \p Out every directory below \p Base matching the remaining
/// components of a member pattern.
void expandMemberPattern(const fs::path &Base,
                         std::vector<std::string>::const_iterator First,
                         std::vector<std::string>::const_iterator Last,
                         std::vector<fs::path> &Out) {
  if (First == Last) {
    Out.push_back(Base);
    return;
  }
  const std::string &Component = *First;
  if (Component.find_first_of("*?") == std::string::npos) {
    expandMemberPattern(Base / Component, First + 1, Last, Out);
    return;
  }
  std::error_code EC;
  std::vector<fs::path> Matches;
  for (fs::directory_iterator It(Base, EC), End; !EC && It != End;
       It.increment(EC)) {
    std::string Name = It->path().filename().string();
    // As in shells and cargo's glob: '*' does not match a leading dot.
    if (Name[0] == '.' && Component[0] != '.')
      continue;
    if (It->is_directory(EC) && globMatch(Component, Name))
      Matches.push_back(It->path());
  }
  std::sort(Matches.begin(), Matches.end());
  for (const fs::path &Match : Matches)
    expandMemberPattern(Match, First + 1, Last, Out);
}

std::vector<std::string> pathComponents(std::string_view Pattern) {
  std::vector<std::string> Components;
  for (const fs::path &Part : fs::path(Pattern).lexically_normal())
    if (!Part.empty() && Part != ".")
      Components.push_back(Part.string());
  return Components;
}

} // namespace

std::vector<Package> listMembers(const Workspace &WS) {
  std::vector<fs::path> Dirs;
  if (WS.Info.HasPackage)
    Dirs.push_back(WS.Root);
  for (const std::string &Pattern : WS.Info.WorkspaceMembers) {
    std::vector<std::string> Components = pathComponents(Pattern);
    expandMemberPattern(WS.Root, Components.begin(), Components.end(), Dirs);
  }

  std::vector<fs::path> Excluded;
  for (const std::string &Path : WS.Info.WorkspaceExclude)
    Excluded.push_back((WS.Root / Path).lexically_normal());

  std::vector<Package> Members;
  std::error_code EC;
  for (const fs::path &Dir : Dirs) {
    fs::path Normal = Dir.lexically_normal();
    bool Skip =
        std::any_of(Excluded.begin(), Excluded.end(),
                    [&](const fs::path &Ex) { return isWithin(Normal, Ex); }) ||
        std::any_of(Members.begin(), Members.end(),
                    [&](const Package &P) { return P.Dir == Normal; });
    if (Skip || !fs::is_regular_file(Normal / "Cargo.toml", EC))
      continue;
    Expected<Package> Pkg = loadPackage(Normal);
    if (Pkg)
      Members.push_back(std::move(*Pkg));
  }
  std::sort(Members.begin(), Members.end(),
            [](const Package &A, const Package &B) { return A.Dir < B.Dir; });
  return Members;
}

std::string describeExamples(const Workspace &WS) {
  std::vector<Package> Examples = listExamples(WS.Root);
  std::string Text;
  if (Examples.empty()) {
    Text = "there are no examples in " + (WS.Root / "examples").string();
  } else {
    Text = "available examples: ";
    bool First = true;
    for (const Package &Ex : Examples) {
      Text += First ? "" : ", ";
      First = false;
      std::string Dir = Ex.Dir.filename().string();
      Text += Dir;
      if (Ex.name() != Dir)
        Text += " (package " + Ex.name() + ")";
    }
  }
  std::string Others;
  for (const Package &Member : listMembers(WS)) {
    bool IsExample =
        std::any_of(Examples.begin(), Examples.end(),
                    [&](const Package &Ex) { return Ex.Dir == Member.Dir; });
    if (IsExample || Member.binaries().empty())
      continue;
    Others += (Others.empty() ? "" : ", ") + Member.name();
  }
  if (!Others.empty())
    Text += "; other packages: " + Others;
  return Text;
}

Expected<Package> resolvePackage(const Workspace &WS, const fs::path &Cwd,
                                 const std::optional<std::string> &Name) {
  fs::path Root = canonicalOr(WS.Root);
  fs::path Here = canonicalOr(Cwd);

  // The package containing the current directory, not looking above the root.
  std::optional<Package> Current;
  if (isWithin(Here, Root)) {
    std::error_code EC;
    for (fs::path Dir = Here;; Dir = Dir.parent_path()) {
      if (fs::is_regular_file(Dir / "Cargo.toml", EC)) {
        Expected<Manifest> Info = readManifest(Dir / "Cargo.toml");
        if (!Info)
          return Info.error();
        if (Info->HasPackage) {
          Expected<Package> Pkg = loadPackage(Dir);
          if (!Pkg)
            return Pkg.error();
          Current = std::move(*Pkg);
          break;
        }
      }
      if (Dir == Root || !Dir.has_parent_path() || Dir.parent_path() == Dir)
        break;
    }
  }

  if (!Name) {
    if (Current)
      return std::move(*Current);
    return Error{
        "no example named, and " + Here.string() + " is not inside a package",
        "name one, e.g. `cargo oxide run vecadd`; " + describeExamples(WS)};
  }

  std::error_code EC;
  bool PlainName = Name->find('/') == std::string::npos && *Name != "." &&
                   *Name != ".." && !Name->empty();
  if (PlainName &&
      fs::is_regular_file(Root / "examples" / *Name / "Cargo.toml", EC))
    return loadPackage(Root / "examples" / *Name);

  for (Package &Ex : listExamples(Root))
    if (sameCrateName(Ex.name(), *Name))
      return std::move(Ex);

  Workspace Canonical = WS;
  Canonical.Root = Root;
  std::vector<Package> Members = listMembers(Canonical);
  std::vector<Package *> ByDir;
  for (Package &Member : Members)
    if (PlainName && Member.Dir.filename() == *Name)
      ByDir.push_back(&Member);
  if (ByDir.size() == 1)
    return std::move(*ByDir.front());
  if (ByDir.size() > 1) {
    std::string Paths;
    for (const Package *P : ByDir)
      Paths += (Paths.empty() ? "" : ", ") + P->name() + " (" +
               P->Dir.lexically_relative(Root).string() + ")";
    return Error{"several packages are in a directory called `" + *Name + "`",
                 "name one by its package name: " + Paths};
  }
  for (Package &Member : Members)
    if (sameCrateName(Member.name(), *Name))
      return std::move(Member);

  if (WS.Info.HasPackage && sameCrateName(WS.Info.PackageName, *Name))
    return loadPackage(Root);
  if (Current && sameCrateName(Current->name(), *Name))
    return std::move(*Current);

  return Error{"no example or package named `" + *Name + "` in " +
                   Root.string(),
               describeExamples(WS)};
}

std::string profileDirName(bool Release) {
  return Release ? "release" : "debug";
}

fs::path oxideOutputDir(const fs::path &TargetDir, const std::string &Package) {
  return TargetDir / "oxide" / Package;
}

} // namespace oxide::cli
