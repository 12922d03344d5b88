#include "preprocessor/translator.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "preprocessor/keywords.h"
#include "preprocessor/lexer.h"
#include "preprocessor/source_edits.h"
#include "preprocessor/sugar.h"

namespace lmdx::pp {
namespace {

// What a '{' opened. Namespaces and extern "C" blocks keep file scope; a shared variable or a
// thread function may be declared only at file scope.
enum class Scope { kTransparent, kFunction, kAggregate };

constexpr char kPointerPrefix[] = "lmdx_shared_";

std::string Quote(std::string_view word) { return "'" + std::string(word) + "'"; }

// A file name as a C string literal, for #line.
std::string CString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::size_t CountNewlines(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

struct SharedVariable {
  Location declared;
  std::string name_space;  // "a::b" for a declaration inside namespace a::b, else empty
};

// One declarator of an LMDX_shared declaration: `*name[dims]`.
struct Declarator {
  std::size_t name;  // token index
  std::string stars;
  std::string dims;
};

class Translator {
 public:
  Translator(std::string_view source, std::string file_name)
      : source_(source), file_name_(std::move(file_name)) {
    for (const Token& token : Tokenize(source)) {
      (token.context == TokenContext::kCode ? code_ : define_).push_back(token);
    }
    skip_.assign(code_.size(), false);
  }

  // Two rewrites that overlap are constructs lmdxpp cannot combine (found by fuzzing): the user
  // gets the place, as for a malformed construct, rather than a crash.
  std::string ApplyEdits() const {
    try {
      return edits_.Apply(source_);
    } catch (const SourceEdits::Overlap& overlap) {
      Location at;
      for (std::size_t k = 0; k < overlap.byte && k < source_.size(); ++k) {
        if (source_[k] == '\n') {
          ++at.line;
          at.column = 1;
        } else {
          ++at.column;
        }
      }
      throw SourceError(at, "lmdxpp cannot rewrite the code here: two of its rewrites overlap");
    }
  }

  const std::vector<SourceNote>& notes() const { return notes_; }

  std::string Run() {
    CollectThreadNamesAndMacros();
    std::size_t i = 0;
    while (i < code_.size()) i = Step(i);
    RewriteSharedNamesInMacros();
    std::string out = "#include <lmdx/lmdx.h>\n#line 1 " + CString(file_name_) + "\n";
    out += ApplyEdits();
    if (main_found_) {
      if (!out.empty() && out.back() != '\n') out += '\n';
      out += GeneratedMain();
    }
    return out;
  }

 private:
  // ---- tokens ------------------------------------------------------------------------------

  bool Is(std::size_t i, std::string_view text) const {
    return i < code_.size() && code_[i].text == text;
  }
  bool IsIdentifier(std::size_t i) const {
    return i < code_.size() && code_[i].kind == TokenKind::kIdentifier;
  }
  bool IsName(std::size_t i) const { return IsIdentifier(i) && !IsKeyword(code_[i].text); }

  // Source text from the start of token a to the end of token b - 1.
  std::string Text(std::size_t a, std::size_t b) const {
    if (a >= b) return "";
    return std::string(source_.substr(code_[a].begin, code_[b - 1].end - code_[a].begin));
  }

  // Where an error about the end of the input points: just past the last token.
  Location EndOfInput() const {
    if (code_.empty()) return {};
    Location at = code_.back().where;
    at.column += static_cast<int>(code_.back().text.size());
    return at;
  }
  Location WhereOf(std::size_t i) const { return i < code_.size() ? code_[i].where : EndOfInput(); }

  [[noreturn]] void Fail(std::size_t i, const std::string& message) const {
    throw SourceError(WhereOf(i), message);
  }

  // The index of the bracket closing the one at open.
  std::size_t Matching(std::size_t open) const {
    std::string_view opening = code_[open].text;
    std::string_view closing = opening == "(" ? ")" : opening == "[" ? "]" : "}";
    int depth = 0;
    for (std::size_t i = open; i < code_.size(); ++i) {
      if (code_[i].text == opening) ++depth;
      if (code_[i].text == closing && --depth == 0) return i;
    }
    Fail(open, Quote(opening) + " is never closed");
  }

  // The arguments between the parentheses at open and close, as token ranges.
  std::vector<std::pair<std::size_t, std::size_t>> Arguments(std::size_t open,
                                                             std::size_t close) const {
    std::vector<std::pair<std::size_t, std::size_t>> arguments;
    if (close == open + 1) return arguments;
    int depth = 0;
    std::size_t start = open + 1;
    for (std::size_t i = open + 1; i <= close; ++i) {
      std::string_view t = code_[i].text;
      if (t == "(" || t == "[" || t == "{") ++depth;
      if ((t == ")" || t == "]" || t == "}") && i != close) --depth;
      if ((t == "," && depth == 0) || i == close) {
        if (i == start) {
          Fail(i, "argument " + std::to_string(arguments.size() + 1) + " is empty");
        }
        arguments.emplace_back(start, i);
        start = i + 1;
      }
    }
    return arguments;
  }

  // ---- scopes ------------------------------------------------------------------------------

  bool AtFileScope() const {
    return std::all_of(scopes_.begin(), scopes_.end(),
                       [](Scope s) { return s == Scope::kTransparent; });
  }

  // The name a namespace's '{' opens ("a::b", "" for an anonymous one or extern "C").
  std::string NamespaceName(std::size_t brace) const {
    std::size_t j = brace;
    while (j > 0 && (IsName(j - 1) || Is(j - 1, "::"))) --j;
    if (j == 0 || !Is(j - 1, "namespace")) return "";
    // Names and '::' only: joined without the source's spacing, as qualifiers are compared.
    std::string name;
    for (std::size_t k = j; k < brace; ++k) name += code_[k].text;
    return name;
  }

  std::string CurrentNamespace() const {
    std::string out;
    for (const std::string& name : scope_names_) {
      if (name.empty()) continue;
      out += (out.empty() ? "" : "::") + name;
    }
    return out;
  }

  Scope Classify(std::size_t brace) const {
    if (!AtFileScope()) return Scope::kAggregate;
    std::size_t i = brace;
    // extern "C" {
    if (i >= 2 && code_[i - 1].kind == TokenKind::kString && Is(i - 2, "extern")) {
      return Scope::kTransparent;
    }
    // namespace a::b {   inline namespace v1 {   namespace {
    std::size_t j = i;
    while (j > 0 && (IsName(j - 1) || Is(j - 1, "::"))) --j;
    if (j > 0 && Is(j - 1, "namespace")) return Scope::kTransparent;
    // f(...) {   f(...) const noexcept {
    j = i;
    static const std::set<std::string_view> kAfterParameters = {
        "const", "noexcept", "override", "final", "volatile", "mutable", "&", "&&"};
    while (j > 0 && kAfterParameters.count(code_[j - 1].text) != 0) --j;
    if (j > 0 && Is(j - 1, ")")) return Scope::kFunction;
    return Scope::kAggregate;
  }

  // ---- the walk ----------------------------------------------------------------------------

  // Handles the token at i and returns the index of the next token to look at.
  std::size_t Step(std::size_t i) {
    if (skip_[i]) return i + 1;
    const Token& token = code_[i];
    if (token.kind == TokenKind::kIdentifier) {
      std::string_view word = token.text;
      if (word == "LMDX_shared") return SharedDeclaration(i);
      if (word == "LMDX_thread") {
        ThreadDeclaration(i);
        return i + 1;
      }
      if (word == "LMDX_task") return TaskDeclaration(i);
      if (tasks_.count(std::string(word)) != 0 && Is(i + 1, "(") && !IsMemberAccess(i)) {
        return TaskCall(i);
      }
      if (const Sugar* sugar = FindSugar(word)) return SugarCall(i, *sugar);
      if (word == "main" && scopes_.empty()) MaybeMain(i);
      if (shared_.count(std::string(word)) != 0) {
        SharedUse(i);
      } else if (LooksLikeConstruct(word) && !IsKnownConstruct(word) &&
                 macros_.count(std::string(word)) == 0) {
        std::string closest = ClosestConstruct(word);
        Fail(i, "unknown LMDX construct " + Quote(word) +
                    (closest.empty() ? "" : "; did you mean " + Quote(closest) + "?"));
      }
    } else if (token.text == "{") {
      scopes_.push_back(Classify(i));
      scope_names_.push_back(scopes_.back() == Scope::kTransparent ? NamespaceName(i) : "");
    } else if (token.text == "}") {
      if (!scopes_.empty()) scopes_.pop_back();
      if (!scope_names_.empty()) scope_names_.pop_back();
    }
    return i + 1;
  }

  static bool LooksLikeConstruct(std::string_view word) {
    return word.size() > 5 && word.substr(0, 5) == "LMDX_" &&
           std::islower(static_cast<unsigned char>(word[5]));
  }

  void CollectThreadNamesAndMacros() {
    for (std::size_t i = 0; i + 1 < code_.size(); ++i) {
      if (Is(i, "LMDX_thread") && IsName(i + 1)) threads_.insert(std::string(code_[i + 1].text));
      if (Is(i, "LMDX_task") && IsName(i + 1)) tasks_.insert(std::string(code_[i + 1].text));
    }
    for (const Token& token : define_) {
      if (token.defined_name) macros_.insert(std::string(token.text));
    }
  }

  // ---- LMDX_shared T *name[dims], ...; ------------------------------------------------------

  std::size_t SharedDeclaration(std::size_t start) {
    if (!AtFileScope()) {
      Fail(start,
           "LMDX_shared declares a variable of the whole job; it belongs at file scope, outside "
           "functions and types");
    }
    std::size_t name = FirstDeclaratorName(start);
    std::size_t type_end = name;
    while (type_end > start + 1 && Is(type_end - 1, "*")) --type_end;
    if (type_end == start + 1) {
      Fail(name, "the LMDX_shared declaration of " + Quote(code_[name].text) + " has no type");
    }
    for (std::size_t i = start + 1; i < type_end; ++i) {
      if (IsStorageClass(code_[i].text)) {
        Fail(i, Quote(code_[i].text) +
                    " cannot apply to a shared variable: each LMDX_shared variable is one named "
                    "variable of the whole job");
      }
    }
    std::string type = Text(start + 1, type_end);
    std::vector<Declarator> declarators;
    std::size_t i = name;
    std::string stars = Text(type_end, name);
    for (;;) {
      std::size_t after = Dimensions(i);
      declarators.push_back({i, stars, Text(i + 1, after)});
      const std::string& declared = std::string(code_[i].text);
      if (Is(after, ";")) {
        i = after;
        break;
      }
      if (Is(after, "=")) {
        Fail(after, "the shared variable " + Quote(declared) +
                        " cannot have an initializer: it starts as zeros on every node; assign "
                        "its first value in main");
      }
      if (!Is(after, ",")) {
        Fail(after, "expected ';' after the LMDX_shared declaration of " + Quote(declared));
      }
      std::size_t next = after + 1;
      while (Is(next, "*")) ++next;
      if (!IsName(next)) Fail(next, "expected the name of a shared variable after ','");
      stars = Text(after + 1, next);
      i = next;
    }
    // The type, stars and sizes are copied as written (comments, line breaks and preprocessor
    // lines inside them mean what they meant), each once: several declarators share the type
    // through a typedef, so the replacement never has more lines than the declaration had.
    std::string replacement;
    if (declarators.size() > 1) {
      std::string shared_type = "lmdx_shared_type_" + std::string(code_[declarators[0].name].text);
      replacement = "typedef " + type + " " + shared_type + "; ";
      type = shared_type;
    }
    for (const Declarator& d : declarators) replacement += SharedDefinition(type, d);
    std::string_view original =
        source_.substr(code_[start].begin, code_[i].end - code_[start].begin);
    // The definitions take the declaration's lines; the lines after keep their numbers.
    std::size_t lines = CountNewlines(original);
    std::size_t used = CountNewlines(replacement);
    if (lines > used) replacement += std::string(lines - used, '\n');
    edits_.Replace(code_[start].begin, code_[i].end, replacement);
    return i + 1;
  }

  // The first declarator's name: the first name at bracket depth 0 followed by '[', ',', ';' or
  // '=' (struct { int a; } s has its members inside braces).
  std::size_t FirstDeclaratorName(std::size_t start) const {
    int depth = 0;
    for (std::size_t i = start + 1; i < code_.size(); ++i) {
      std::string_view t = code_[i].text;
      if (t == "(" && depth == 0 && IsIdentifier(i - 1) && i - 1 > start) {
        Fail(i - 1,
             "LMDX_shared declares variables, written 'type name[dims];' (a function or "
             "a parenthesised declarator cannot be shared; use a typedef)");
      }
      // A name followed by the start of another declaration: the ';' after the name is missing.
      bool starts_declaration =
          (IsTypeKeyword(t) && t != "const" && t != "volatile" && t != "restrict") ||
          t == "struct" || t == "union" || t == "enum" || t == "LMDX_shared" || t == "LMDX_thread";
      if (depth == 0 && starts_declaration && i - 1 > start && IsName(i - 1)) {
        Fail(i, "expected ';' after the LMDX_shared declaration of " + Quote(code_[i - 1].text));
      }
      if (t == "(" || t == "[" || t == "{" || t == "<") {
        ++depth;
      } else if (t == ")" || t == "]" || t == "}" || t == ">") {
        if (--depth < 0) break;
      } else if (depth == 0 && t == ";") {
        Fail(i, "expected the name of a shared variable before ';'");
      } else if (depth == 0 && IsName(i) &&
                 (Is(i + 1, "[") || Is(i + 1, ",") || Is(i + 1, ";") || Is(i + 1, "="))) {
        return i;
      }
    }
    Fail(start, "expected 'type name[dims];' after LMDX_shared");
  }

  // Skips the [dims] after the name at i and returns the index after them.
  std::size_t Dimensions(std::size_t i) {
    std::string name(code_[i].text);
    if (shared_.count(name) != 0) {
      Fail(i, "the shared variable " + Quote(name) + " is declared twice (first at line " +
                  std::to_string(shared_[name].declared.line) + ")");
    }
    shared_[name] = {code_[i].where, CurrentNamespace()};
    std::size_t next = i + 1;
    while (Is(next, "[")) {
      std::size_t close = Matching(next);
      if (close == next + 1) {
        Fail(next, "the shared array " + Quote(name) +
                       " needs every size: each node must know how large it is");
      }
      next = close + 1;
    }
    return next;
  }

  // A pointer to the named variable and a constructor that registers it: lmdx_init binds it on
  // every node before main or any thread runs (docs/preprocessor.md).
  std::string SharedDefinition(const std::string& type, const Declarator& d) const {
    std::string name(code_[d.name].text);
    std::string pointer = kPointerPrefix + name;
    // Parentheses only where a pointer to an array needs them (C++ warns about the others).
    std::string declarator = d.dims.empty() ? "*" + pointer : "(*" + pointer + ")" + d.dims;
    return "static " + type + " " + d.stars + declarator + "; " + "static void lmdx_bind_" + name +
           "(void *lmdx_address) { " + pointer + " = (__typeof__(" + pointer +
           "))lmdx_address; } " + "__attribute__((constructor)) static void lmdx_register_" + name +
           "(void) { lmdx_register_shared(\"" + name + "\", sizeof(*" + pointer + "), lmdx_bind_" +
           name + "); } ";
  }

  // ---- LMDX_thread f(void *arg) -------------------------------------------------------------

  void ThreadDeclaration(std::size_t i) {
    if (!AtFileScope()) {
      Fail(i, "LMDX_thread declares a thread function; it belongs at file scope");
    }
    if (!IsName(i + 1)) Fail(i + 1, "expected the thread function's name after LMDX_thread");
    std::string name(code_[i + 1].text);
    if (!Is(i + 2, "(")) {
      Fail(i + 2, "expected '(' after LMDX_thread " + name + ": write LMDX_thread " + name +
                      "(void *arg)");
    }
    std::size_t open = i + 2;
    std::size_t close = Matching(open);
    if (close == open + 1 || (close == open + 2 && Is(open + 1, "void"))) {
      edits_.Replace(code_[open].end, code_[close].begin, "void *lmdx_arg __attribute__((unused))");
    } else if (!IsVoidPointerParameter(open + 1, close)) {
      Fail(open + 1,
           "an LMDX_thread takes one 'void *' argument: write LMDX_thread " + name + "(void *arg)");
    }
    edits_.Replace(code_[i].begin, code_[i].end, "void *");
    if (Is(close + 1, "{")) {
      // A thread that falls off its end returns NULL to its joiner, as MDX's threads did.
      edits_.Insert(code_[Matching(close + 1)].begin, "return (void *)0; ");
    } else if (!Is(close + 1, ";")) {
      Fail(close + 1, "expected '{' or ';' after LMDX_thread " + name + "(...)");
    }
  }

  // ---- LMDX_task f(T *args), and calls f(&x) that become spawns -----------------------------

  // Returns the index after the task's name, which is not a call.
  std::size_t TaskDeclaration(std::size_t i) {
    if (!AtFileScope()) Fail(i, "LMDX_task declares a task function; it belongs at file scope");
    if (!IsName(i + 1)) Fail(i + 1, "expected the task function's name after LMDX_task");
    std::string name(code_[i + 1].text);
    if (!Is(i + 2, "(")) {
      Fail(i + 2, "expected '(' after LMDX_task " + name + ": write LMDX_task " + name +
                      "(struct args *a)");
    }
    std::size_t close = Matching(i + 2);
    auto parameters = Arguments(i + 2, close);
    bool one_pointer = parameters.size() == 1;
    if (one_pointer) {
      one_pointer = false;
      for (std::size_t t = parameters[0].first; t < parameters[0].second; ++t) {
        if (Is(t, "*")) one_pointer = true;
      }
    }
    if (!one_pointer) {
      Fail(i + 3,
           "a task takes one pointer to its arguments, which it gets a copy of: write "
           "LMDX_task " +
               name + "(struct args *a)");
    }
    edits_.Replace(code_[i].begin, code_[i].end, "void");
    return i + 2;
  }

  bool IsMemberAccess(std::size_t i) const { return i > 0 && (Is(i - 1, ".") || Is(i - 1, "->")); }

  // f(&x) -> lmdx_spawn_task(f, &x): a spawn of f on a copy of *(&x), written back at the
  // caller's next LMDX_wait(). The argument keeps its own tokens (and their edits).
  std::size_t TaskCall(std::size_t i) {
    std::size_t open = i + 1;
    std::size_t close = Matching(open);
    std::string name(code_[i].text);
    if (Arguments(open, close).size() != 1) {
      Fail(i, "a call of the task " + Quote(name) + " takes one pointer to its arguments: " + name +
                  "(&args)");
    }
    edits_.Replace(code_[i].begin, code_[open].end, "lmdx_spawn_task(" + name + ", ");
    return open + 1;
  }

  // [const] void [const] * [const|restrict] [name]
  bool IsVoidPointerParameter(std::size_t i, std::size_t end) const {
    static const std::set<std::string_view> kQualifiers = {"const", "volatile", "restrict",
                                                           "__restrict", "__restrict__"};
    auto skip_qualifiers = [&] {
      while (i < end && kQualifiers.count(code_[i].text) != 0) ++i;
    };
    skip_qualifiers();
    if (!Is(i, "void")) return false;
    ++i;
    skip_qualifiers();
    if (!Is(i, "*")) return false;
    ++i;
    skip_qualifiers();
    if (i < end && IsName(i)) ++i;
    return i == end;
  }

  // ---- LMDX_barrier(a), LMDX_start_thread(f), ... ------------------------------------------

  std::size_t SugarCall(std::size_t i, const Sugar& sugar) {
    if (!Is(i + 1, "("))
      Fail(i, Quote(sugar.macro) + " needs its arguments: " + std::string(sugar.usage));
    std::size_t open = i + 1;
    std::size_t close = Matching(open);
    auto arguments = Arguments(open, close);
    int count = static_cast<int>(arguments.size());
    if (count < sugar.min_arguments || count > sugar.max_arguments) {
      Fail(i, Quote(sugar.macro) + " takes " + ArgumentCount(sugar) + ", not " +
                  std::to_string(count) + ": " + std::string(sugar.usage));
    }
    edits_.Replace(code_[i].begin, code_[i].end, std::string(sugar.function));
    switch (sugar.kind) {
      case Sugar::Kind::kNamed: ObjectName(sugar, arguments[0]); break;
      case Sugar::Kind::kStart:
      case Sugar::Kind::kStartOn:
        if (count == sugar.min_arguments) edits_.Insert(code_[close].begin, ", (void *)0");
        break;
      case Sugar::Kind::kThreadId: {
        auto [first, end] = arguments[0];
        if (end == first + 1 && threads_.count(std::string(code_[first].text)) != 0) {
          edits_.Insert(code_[first].begin, "lmdx_thread_started_from(");
          edits_.Insert(code_[first].end, ")");
          skip_[first] = true;
        }
        break;
      }
      case Sugar::Kind::kExit:
        if (count == 0) edits_.Insert(code_[close].begin, "(void *)0");
        break;
    }
    return open + 1;  // the arguments may hold shared names and more calls
  }

  static std::string ArgumentCount(const Sugar& sugar) {
    auto plural = [](int n) { return std::to_string(n) + (n == 1 ? " argument" : " arguments"); };
    if (sugar.min_arguments == sugar.max_arguments) return plural(sugar.max_arguments);
    return std::to_string(sugar.min_arguments) + " or " + std::to_string(sugar.max_arguments) +
           " arguments";
  }

  // A name written as an identifier becomes a string; a string literal stays.
  void ObjectName(const Sugar& sugar, std::pair<std::size_t, std::size_t> argument) {
    auto [first, end] = argument;
    bool literal = std::all_of(code_.begin() + static_cast<std::ptrdiff_t>(first),
                               code_.begin() + static_cast<std::ptrdiff_t>(end),
                               [](const Token& t) { return t.kind == TokenKind::kString; });
    if (end == first + 1 && code_[first].kind == TokenKind::kIdentifier) {
      edits_.Replace(code_[first].begin, code_[first].end,
                     "\"" + std::string(code_[first].text) + "\"");
    } else if (!literal) {
      Fail(first, "the name in " + Quote(sugar.macro) +
                      " must be an identifier or a string literal; for a name computed at run "
                      "time call " +
                      std::string(sugar.function) + "(name, ...)");
    }
    for (std::size_t i = first; i < end; ++i) skip_[i] = true;
  }

  // ---- main --------------------------------------------------------------------------------

  void MaybeMain(std::size_t i) {
    if (i > 0 && (Is(i - 1, ".") || Is(i - 1, "->") || Is(i - 1, "::"))) return;
    if (!Is(i + 1, "(")) return;
    std::size_t close = Matching(i + 1);
    if (!Is(close + 1, "{")) return;  // a declaration, not the definition
    std::size_t body_end = Matching(close + 1);
    // A program that starts LMDX itself (SPMD programs, modules), in main or in a function of its
    // own, in C or C++ spelling, keeps its main.
    if (StartsLmdxItself()) return;
    auto parameters = Arguments(i + 1, close);
    bool void_list = parameters.size() == 1 && parameters[0].second == parameters[0].first + 1 &&
                     Is(parameters[0].first, "void");
    main_parameters_ = void_list ? 0 : parameters.size();
    if (main_parameters_ == 1 || main_parameters_ > 3) {
      Fail(i + 1, "main takes no parameters, (argc, argv) or (argc, argv, envp)");
    }
    main_returns_void_ = i > 0 && Is(i - 1, "void");
    main_found_ = true;
    notes_.push_back(
        {WhereOf(i),
         "lmdxpp starts LMDX before this main with lmdx_init, since the program does not call "
         "it: threads style, where main runs on rank 0 only and the other ranks run the threads "
         "it starts; to run main on every rank (SPMD), call lmdx_init_spmd(&argc, &argv) in it"});
    edits_.Replace(code_[i].begin, code_[i].end, kRenamedMain);
    // Flowing off the end of main returns 0 (C99, C++); off the end of the function it becomes,
    // it returns garbage in C and is undefined in C++ (a crash at exit with g++).
    if (!main_returns_void_) edits_.Insert(code_[body_end].begin, "return 0; ");
  }

  // Whether the file calls lmdx_init or lmdx_init_spmd, or lmdx::init or lmdx::init_spmd.
  bool StartsLmdxItself() const {
    for (std::size_t j = 0; j + 1 < code_.size(); ++j) {
      if (!Is(j + 1, "(")) continue;
      if (Is(j, "lmdx_init") || Is(j, "lmdx_init_spmd")) return true;
      if ((Is(j, "init") || Is(j, "init_spmd")) && j >= 2 && Is(j - 1, "::") && Is(j - 2, "lmdx")) {
        return true;
      }
    }
    return false;
  }

  std::string GeneratedMain() const {
    static const char* const kParameters[] = {"", "", "int argc, char **argv",
                                              "int argc, char **argv, char **envp"};
    static const char* const kArguments[] = {"", "", "argc, argv", "argc, argv, envp"};
    std::string call = std::string(kRenamedMain) + "(" + kArguments[main_parameters_] + ")";
    std::string main_parameters = main_parameters_ == 3 ? kParameters[3] : kParameters[2];
    std::string out = "#line 1 " + CString("<lmdxpp: main of " + file_name_ + ">") + "\n";
    out += "int main(" + main_parameters + ") {\n";
    // Not plain lmdx_init: a deadlock report can then say that lmdxpp chose threads style.
    out += "  lmdx_init_from_lmdxpp(&argc, &argv, " + CString(file_name_) + ");\n";
    out += main_returns_void_ ? "  " + call + ";\n  return 0;\n" : "  return " + call + ";\n";
    out += "}\n";
    return out;
  }

  // ---- uses of shared names -----------------------------------------------------------------

  std::string PointerExpression(std::string_view name) const {
    return "(*" + std::string(kPointerPrefix) + std::string(name) + ")";
  }

  void SharedUse(std::size_t i) {
    std::string_view name = code_[i].text;
    const SharedVariable& variable = shared_.at(std::string(name));
    if (i > 0) {
      std::string_view before = code_[i - 1].text;
      // A member or a tag of the same spelling is another entity.
      if (before == "." || before == "->" || before == "struct" || before == "union" ||
          before == "enum" || before == "class" || before == "goto") {
        return;
      }
      if (before == "::") {
        QualifiedSharedUse(i, variable);
        return;
      }
      if (DeclaresAgain(i)) {
        Fail(i, Quote(name) + " is declared here but names the LMDX_shared variable of line " +
                    std::to_string(variable.declared.line) +
                    "; lmdxpp turns every use of that name into shared memory, so rename one "
                    "of them");
      }
    }
    edits_.Replace(code_[i].begin, code_[i].end, PointerExpression(name));
  }

  // ns::grid and ::grid name the shared variable when the qualifier is (the end of) the
  // namespace it was declared in; std::count stays std::count beside a shared `count`.
  void QualifiedSharedUse(std::size_t i, const SharedVariable& variable) {
    std::size_t first = i;
    std::string qualifier;
    while (first >= 2 && Is(first - 1, "::") && IsName(first - 2)) {
      if (!qualifier.empty()) qualifier.insert(0, "::");
      qualifier.insert(0, code_[first - 2].text);
      first -= 2;
    }
    bool global = first >= 1 && Is(first - 1, "::");
    if (global) --first;
    const std::string& ns = variable.name_space;
    bool same = qualifier.empty()
                    ? ns.empty()
                    : ns == qualifier || (!global && ns.size() > qualifier.size() &&
                                          ns.compare(ns.size() - qualifier.size(), qualifier.size(),
                                                     qualifier) == 0 &&
                                          ns[ns.size() - qualifier.size() - 1] == ':');
    if (!same) return;
    std::string pointer = Text(first, i) + kPointerPrefix + std::string(code_[i].text);
    // using ns::grid; brings the pointer in, and plain uses of grid then find it.
    bool using_declaration = first > 0 && Is(first - 1, "using");
    edits_.Replace(code_[first].begin, code_[i].end,
                   using_declaration ? pointer : "(*" + pointer + ")");
  }

  // True when the name at i follows a type (int grid, size_t grid, float *grid): a declaration
  // of something else with the shared variable's name.
  bool DeclaresAgain(std::size_t i) const {
    std::size_t j = i;
    while (j > 0 && (Is(j - 1, "*") || Is(j - 1, "&"))) --j;
    if (j == 0 || !IsIdentifier(j - 1)) return false;
    std::string_view before = code_[j - 1].text;
    if (IsTypeKeyword(before)) return true;
    if (j != i) return false;  // size * grid multiplies
    return !IsKeyword(before) && FindSugar(before) == nullptr;
  }

  void RewriteSharedNamesInMacros() {
    for (std::size_t i = 0; i < define_.size(); ++i) {
      const Token& token = define_[i];
      if (token.kind != TokenKind::kIdentifier || token.defined_name) continue;
      if (shared_.count(std::string(token.text)) == 0) continue;
      if (i > 0 && (define_[i - 1].text == "." || define_[i - 1].text == "->")) continue;
      edits_.Replace(token.begin, token.end, PointerExpression(token.text));
    }
  }

  std::string_view source_;
  std::string file_name_;
  std::vector<Token> code_;
  std::vector<Token> define_;  // tokens of #define lines
  std::vector<bool> skip_;     // tokens already rewritten as part of a construct
  std::vector<Scope> scopes_;
  std::vector<std::string> scope_names_;  // each scope's namespace name, "" for the others
  std::map<std::string, SharedVariable> shared_;
  std::set<std::string> threads_;
  std::set<std::string> tasks_;
  std::set<std::string> macros_;  // names the file #defines
  SourceEdits edits_;
  bool main_found_ = false;
  std::vector<SourceNote> notes_;
  bool main_returns_void_ = false;
  std::size_t main_parameters_ = 0;
};

}  // namespace

std::string Translate(std::string_view source, const std::string& file_name,
                      std::vector<SourceNote>* notes) {
  Translator translator(source, file_name);
  std::string out = translator.Run();
  if (notes != nullptr) *notes = translator.notes();
  return out;
}

}  // namespace lmdx::pp
