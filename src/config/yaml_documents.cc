#include "config/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>

namespace sluice::config_detail {

namespace {

// Sees the events of one document and nothing else: whether it was a lone null (what the
// parser reports for a token it cannot start a node with) and where it started.
class DocumentProbe : public YAML::EventHandler {
 public:
  explicit DocumentProbe(size_t max_events) : max_events_(max_events) {}
  void OnDocumentStart(const YAML::Mark& mark) override {
    count(mark);
    start_ = mark;
    events_ = 0;
    null_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override {
    null_ = events_ == 0;
    ++events_;
    count(mark);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    ++events_;
    count(mark);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    ++events_;
    count(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    ++events_;
    count(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    ++events_;
    count(mark);
  }
  void OnMapEnd() override {}

  const YAML::Mark& start() const { return start_; }
  bool lone_null() const { return null_ && events_ == 1; }

 private:
  void count(const YAML::Mark& mark) {
    if (++total_ > max_events_)
      throw YAML::ParserException(mark,
                                  "the parser does not come to an end on this text (more than " +
                                      std::to_string(max_events_) + " nodes)");
  }
  size_t max_events_;
  size_t total_ = 0;
  YAML::Mark start_;
  int events_ = 0;
  bool null_ = false;
};

}  // namespace

std::vector<YAML::Node> load_all_documents(const std::string& text, size_t max_events) {
  // 1. Walk the documents' events (no nodes built): two lone-null documents in a row that start
  //    at the same position mean the parser stands still on a token; LoadAll would loop there.
  {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentProbe probe(max_events);
    bool last_null = false;
    int last_pos = -1;
    while (parser.HandleNextDocument(probe)) {
      if (probe.lone_null() && last_null && probe.start().pos == last_pos)
        throw YAML::ParserException(probe.start(), "unexpected token (not the start of a node)");
      last_null = probe.lone_null();
      last_pos = probe.start().pos;
    }
  }
  // 2. Now LoadAll returns.
  return YAML::LoadAll(text);
}

}  // namespace sluice::config_detail
