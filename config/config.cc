// Parsing the configuration file: protobuf's text format, its errors said in the file's terms,
// then the checks (internal/checks.h).
#include "config/config.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <map>
#include <set>

#include "base/error.h"
#include "config/internal/checks.h"
#include "config/internal/syntax_errors.h"
#include "config/internal/values.h"

namespace lmdx::config {
namespace {

using namespace internal;  // NOLINT(google-build-using-namespace): this layer's own helpers

// Where each message type of the schema sits in a file: "lmdx.config.Dsm" -> "dsm".
void CollectPaths(const pb::Descriptor* type, const std::string& path,
                  std::map<std::string, std::string>& paths) {
  if (!paths.emplace(type->full_name(), path).second) return;
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    if (field->message_type() == nullptr) continue;
    CollectPaths(field->message_type(), path.empty() ? field->name() : path + "." + field->name(),
                 paths);
  }
}

// The enumeration of the schema's field with this name, if one has it.
const pb::EnumDescriptor* EnumFieldType(const pb::Descriptor* type, const std::string& name,
                                        std::set<const pb::Descriptor*>& seen) {
  if (!seen.insert(type).second) return nullptr;
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    if (field->name() == name && field->enum_type() != nullptr) return field->enum_type();
    if (field->message_type() != nullptr) {
      if (const pb::EnumDescriptor* found = EnumFieldType(field->message_type(), name, seen)) {
        return found;
      }
    }
  }
  return nullptr;
}

// Two of protobuf's messages, said in the file's terms and with the choices there are; any other
// message is kept as it is.
std::string Explain(const std::string& message) {
  const std::string no_field_head = "Message type \"";
  const std::string no_field_mid = "\" has no field named \"";
  std::size_t mid = message.find(no_field_mid);
  if (message.rfind(no_field_head, 0) == 0 && mid != std::string::npos) {
    std::string type_name = message.substr(no_field_head.size(), mid - no_field_head.size());
    std::size_t name_start = mid + no_field_mid.size();
    std::size_t name_end = message.find('"', name_start);
    const pb::Descriptor* type =
        pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
    if (type == nullptr || name_end == std::string::npos) return message;
    std::map<std::string, std::string> paths;
    CollectPaths(Config::descriptor(), "", paths);
    auto path = paths.find(type_name);
    if (path == paths.end()) return message;
    std::vector<std::string> fields;
    fields.reserve(static_cast<std::size_t>(type->field_count()));
    for (int i = 0; i < type->field_count(); ++i) fields.push_back(type->field(i)->name());
    std::string where = path->second.empty() ? "at the top level" : "in " + path->second;
    return "unknown field \"" + message.substr(name_start, name_end - name_start) + "\" " + where +
           " (known: " + OneOf(fields) + ")";
  }
  const std::string enum_head = "Unknown enumeration value of \"";
  const std::string enum_mid = "\" for field \"";
  mid = message.find(enum_mid);
  if (message.rfind(enum_head, 0) == 0 && mid != std::string::npos) {
    std::string value = message.substr(enum_head.size(), mid - enum_head.size());
    std::size_t name_start = mid + enum_mid.size();
    std::size_t name_end = message.find('"', name_start);
    if (name_end == std::string::npos) return message;
    std::string field = message.substr(name_start, name_end - name_start);
    std::set<const pb::Descriptor*> seen;
    const pb::EnumDescriptor* type = EnumFieldType(Config::descriptor(), field, seen);
    if (type == nullptr) return message;
    return "unknown value \"" + value + "\" for " + field + " (" +
           OneOf(EnumValueNames(type, false)) + ")";
  }
  return message;
}

// Keeps protobuf's first error and where it was.
class FirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (found_) return;
    found_ = true;
    where_ = {line, column};
    message_ = message;
  }
  bool found() const { return found_; }
  Checker::Where where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  bool found_ = false;
  Checker::Where where_;
  std::string message_;
};

// Protobuf reports a few errors once it has read the token at fault: at the token after it. These
// are moved back to the token at fault (the unknown name, the bad value).
bool ReportedAfterTheToken(const std::string& message) {
  for (const char* text : {"has no field named", "Unknown enumeration value",
                           "is specified multiple times", "Invalid value for boolean field"}) {
    if (message.find(text) != std::string::npos) return true;
  }
  return false;
}

// The start of the last token before `where`, counted as protobuf's parser counts (tabs to the
// next multiple of 8).
Checker::Where TokenBefore(std::string_view text, Checker::Where where) {
  Checker::Where previous = where;
  for (const internal::Token& token : internal::Tokenize(text)) {
    if (token.line > where.line || (token.line == where.line && token.column >= where.column)) {
      break;
    }
    previous = {token.line, token.column};
  }
  return previous;
}

}  // namespace

Config ParseConfigText(std::string_view text, std::string_view file_name, SourceLines* lines) {
  Config config;
  FirstError errors;
  Tree tree;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  parser.AllowUnknownField(false);
  parser.AllowUnknownExtension(false);
  bool parsed = parser.ParseFromString(std::string(text), &config);
  if (!parsed || errors.found()) {
    Checker checker(file_name, nullptr);
    if (!errors.found()) Fail(checker.Prefix({}) + "cannot parse the file");
    Checker::Where where = errors.where();
    if (where.line >= 0 && ReportedAfterTheToken(errors.message())) {
      where = TokenBefore(text, where);
    }
    if (where.line >= 0) {
      if (auto syntax =
              internal::ExplainSyntaxError(text, where.line, where.column, errors.message())) {
        Fail(checker.Prefix({syntax->line, syntax->column}) + syntax->message);
      }
    }
    Fail(checker.Prefix(where) + Explain(errors.message()));
  }
  if (lines != nullptr) *lines = SourceLines();
  Check(config, file_name, &tree, lines);
  return config;
}

Config LoadConfigFile(const std::string& path, SourceLines* lines) {
  return ParseConfigText(ReadFile(path, path + ": cannot read the configuration file"), path,
                         lines);
}

}  // namespace lmdx::config
