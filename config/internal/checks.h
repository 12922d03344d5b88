// The checks of a parsed configuration, each mistake named with its file, line and field path
// (docs/configuration.md), and the Checker that locates fields in the parsed text.
#ifndef LMDX_CONFIG_INTERNAL_CHECKS_H_
#define LMDX_CONFIG_INTERNAL_CHECKS_H_

#include <google/protobuf/text_format.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/internal/values.h"

namespace lmdx::config::internal {

namespace pb = google::protobuf;
using Tree = pb::TextFormat::ParseInfoTree;

// Locations of fields in the parsed text, and errors that name them. Without a tree (a Config
// that did not come from text) the messages name the field only.
class Checker {
 public:
  Checker(std::string_view file_name, const Tree* tree) : file_(file_name), tree_(tree) {}

  // Where a field is written: 0-based line and column, or line -1.
  struct Where {
    int line = -1;
    int column = -1;
  };

  // Another node of the tree: the message held in field (index -1 when not repeated).
  static const Tree* Nested(const Tree* tree, const pb::FieldDescriptor* field, int index) {
    return tree == nullptr ? nullptr : tree->GetTreeForNested(field, index);
  }
  static Where Find(const Tree* tree, const pb::FieldDescriptor* field, int index) {
    if (tree == nullptr) return {};
    pb::TextFormat::ParseLocation at = tree->GetLocation(field, index);
    return {at.line, at.column};
  }
  const Tree* root() const { return tree_; }

  // "FILE:LINE:COL: PATH: reason", the first location known among those given.
  [[noreturn]] void Error(std::initializer_list<Where> places, const std::string& path,
                          const std::string& reason) const {
    Where at;
    for (Where where : places) {
      if (where.line >= 0) {
        at = where;
        break;
      }
    }
    std::string text = Prefix(at);
    text += path;
    text += ": ";
    text += reason;
    Fail(text);
  }

  std::string Prefix(Where where) const {
    std::string prefix = file_;
    if (where.line >= 0) {
      prefix += ":" + std::to_string(where.line + 1) + ":" + std::to_string(where.column + 1);
    }
    return prefix.empty() ? prefix : prefix + ": ";
  }

 private:
  std::string file_;
  const Tree* tree_;
};

// Every check of every section; a mistake throws (Fail) naming where it is. tree locates fields
// (nullptr for a Config that did not come from text); lines, when given, gets modules' and links'
// places for later messages.
void Check(const Config& config, std::string_view file_name, const Tree* tree,
           SourceLines* lines = nullptr);

}  // namespace lmdx::config::internal

#endif  // LMDX_CONFIG_INTERNAL_CHECKS_H_
