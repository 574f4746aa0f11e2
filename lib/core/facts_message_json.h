// The codec of core/facts_message.h. Only .cc files include this header (it
// pulls in Boost.JSON).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string_view>

#include "core/facts_message.h"
#include "core/messages_json.h"

namespace cp::msg {

// The facts as the agent sends them and the store keeps them: every key the
// probe knows, null for what the host could not tell; "ram_dir" has no
// "mount_source"/"device"/"zfs"; "agent" and "agent_max_rss_kb" only when set.
boost::json::object to_json(const Facts& m);

// Facts describe a host: a part it could not tell is null or absent, never an
// error, so whatever their source a missing or mistyped field keeps its
// default (old stored runs read so). From the peer, a value that is not an
// object throws Error(kPeer) naming `what`.
void from_json(const boost::json::value& v, Facts& m, Source src, std::string_view what);

}  // namespace cp::msg
