// The small-file pass over a share's messages (messages.h, "small files
// over a share"), as messages.cc codes the rest.
#include <boost/json.hpp>

#include "core/messages_in.h"
#include "core/messages_json.h"

namespace cp::msg {

CP_MESSAGE_FIELDS(FilesShareRequest) {
  v.need("share", m.share)
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

CP_MESSAGE_FIELDS(FilesShareResult) {
  v.need("phases", m.phases)
      .need("in_flight", m.in_flight)
      .opt("in_flight_note", m.in_flight_note)
      .need("created", m.created)
      .opt("kept", m.kept)
      .opt("properties", m.properties)
      .omit_empty("leftover", m.leftover);
}

CP_MESSAGE_FIELDS(FilesTreeRequest) {
  v.need("dir", m.dir)
      .need("name", m.name)
      .need("action", m.action)
      .need("count", m.count)
      .need("size", m.size)
      .need("dirs", m.dirs);
}

CP_MESSAGE_FIELDS(FilesTreeResult) {
  v.need("files", m.files)
      .need("bytes", m.bytes)
      .need("seconds", m.seconds)
      .opt("cache_possible", m.cache_possible)
      .omit_empty("cache_reason", m.cache_reason);
}

}  // namespace cp::msg
