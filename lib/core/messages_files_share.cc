// The small-file pass over a share's messages (messages.h, "small files
// over a share"), as messages.cc codes the rest.
#include <boost/json.hpp>

#include "core/messages_in.h"
#include "core/messages_json.h"

namespace cp::msg {
namespace json = boost::json;
using codec::array_of;
using codec::In;
using codec::strings;

json::object to_json(const FilesShareRequest& m) {
  return {{"share", to_json(m.share)},
          {"root", m.root},
          {"count", m.count},
          {"size", m.size},
          {"dirs", m.dirs},
          {"order", m.order},
          {"seed", m.seed},
          {"budget", m.budget},
          {"in_flight", m.in_flight},
          {"laid_out", m.laid_out},
          {"phase", m.phase},
          {"existing", m.existing}};
}
void from_json(const json::value& v, FilesShareRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("share", m.share)
      .need("root", m.root)
      .need("count", m.count)
      .need("size", m.size)
      .need("dirs", m.dirs)
      .need("order", m.order)
      .opt("seed", m.seed)
      .opt("budget", m.budget)
      .opt("in_flight", m.in_flight)
      .opt("laid_out", m.laid_out)
      .opt("phase", m.phase)
      .opt("existing", m.existing);
}

json::object to_json(const FilesShareResult& m) {
  json::object o{{"phases", array_of(m.phases)},
                 {"in_flight", m.in_flight},
                 {"in_flight_note", m.in_flight_note},
                 {"created", m.created},
                 {"kept", m.kept},
                 {"properties", strings(m.properties)}};
  if (!m.leftover.empty()) o["leftover"] = m.leftover;
  return o;
}
void from_json(const json::value& v, FilesShareResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("phases", m.phases)
      .need("in_flight", m.in_flight)
      .opt("in_flight_note", m.in_flight_note)
      .need("created", m.created)
      .opt("kept", m.kept)
      .opt("leftover", m.leftover)
      .opt("properties", m.properties);
}

json::object to_json(const FilesTreeRequest& m) {
  return {{"dir", m.dir},     {"name", m.name}, {"action", m.action},
          {"count", m.count}, {"size", m.size}, {"dirs", m.dirs}};
}
void from_json(const json::value& v, FilesTreeRequest& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("dir", m.dir)
      .need("name", m.name)
      .need("action", m.action)
      .need("count", m.count)
      .need("size", m.size)
      .need("dirs", m.dirs);
}

json::object to_json(const FilesTreeResult& m) {
  json::object o{{"files", m.files},
                 {"bytes", m.bytes},
                 {"seconds", m.seconds},
                 {"cache_possible", m.cache_possible}};
  if (!m.cache_reason.empty()) o["cache_reason"] = m.cache_reason;
  return o;
}
void from_json(const json::value& v, FilesTreeResult& m, Source src, std::string_view what) {
  In(v, src, what)
      .need("files", m.files)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .opt("cache_possible", m.cache_possible)
      .opt("cache_reason", m.cache_reason);
}

}  // namespace cp::msg
