// A bound on the YAML nodes of a document, checked before yaml-cpp builds its node tree: that
// tree costs 350-700 bytes per node (a 2 MiB list of "1," took 697 MB), so the node count, not
// the file size, is what bounds the memory of loading a model or layer set (docs/ERRORS.md,
// "Limits"). The count runs yaml-cpp's event parser, which streams and builds nothing, but scans
// the text as slowly as the parse that follows (RegNetY-400MF's 42 KB model: 11 ms of its 24 ms
// load went to scanning it twice), so a text too short to hold that many nodes skips it.
#pragma once

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <cstddef>
#include <sstream>
#include <string>

namespace winfer {

constexpr size_t kMaxYamlNodes = size_t(1) << 18;  // 262144 nodes: ~180 MB of node tree at most
// yaml-cpp makes at most this many nodes per byte of text: ":" alone is a map, its null key and
// null value; beyond a few bytes the densest texts ("?\n" repeated: a null key and value per 2
// bytes) make one per byte (3 million random short texts and the dense patterns, session 30;
// file_safety_test.cpp checks the patterns).
constexpr size_t kMaxYamlNodesPerByte = 3;
// A text this short cannot pass kMaxYamlNodes: count_yaml_nodes has nothing to check.
constexpr size_t kYamlBytesWithinNodeLimit = kMaxYamlNodes / kMaxYamlNodesPerByte;

// Thrown by count_yaml_nodes past the limit, with the 1-based line where it was passed.
struct TooManyYamlNodes {
  int line;
};

// Counts the first document's nodes; throws TooManyYamlNodes past kMaxYamlNodes, and
// YAML::Exception on a syntax error (as YAML::Load would). Returns the count, or 0 at once for a
// text of at most kYamlBytesWithinNodeLimit bytes unless even_if_short (the parse that follows
// finds its syntax errors).
inline size_t count_yaml_nodes(const std::string& text, bool even_if_short = false) {
  if (!even_if_short && text.size() <= kYamlBytesWithinNodeLimit) return 0;
  class Counter : public YAML::EventHandler {
   public:
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { count(mark); }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { count(mark); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
      count(mark);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
      count(mark);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
      count(mark);
    }
    void OnMapEnd() override {}

    size_t nodes() const { return nodes_; }

   private:
    void count(const YAML::Mark& mark) {
      if (++nodes_ > kMaxYamlNodes) throw TooManyYamlNodes{mark.line + 1};
    }
    size_t nodes_ = 0;
  };
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  Counter counter;
  parser.HandleNextDocument(counter);
  return counter.nodes();
}

}  // namespace winfer
