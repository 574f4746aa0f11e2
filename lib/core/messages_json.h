// The codecs of core/messages.h: one to_json / from_json pair per message.
// Only .cc files include this header (it pulls in Boost.JSON).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <string_view>

#include "core/messages.h"

namespace cp::msg {

// kPeer: a message from the other end of the wire: a required field missing or
// any field mistyped throws Error(kPeer) naming `what` and the field.
// kStored: JSON this program stored earlier (details): whatever is
// missing or mistyped keeps its default, so older runs stay readable.
enum class Source { kPeer, kStored };
// The longest string a peer's message field may hold, bytes.
inline constexpr size_t kMaxPeerString = 64u << 10;

#define CP_MESSAGE_CODEC(T)                \
  boost::json::object to_json(const T& m); \
  void from_json(const boost::json::value& v, T& m, Source src, std::string_view what);

CP_MESSAGE_CODEC(DiskRequest)
CP_MESSAGE_CODEC(DiskResult)
CP_MESSAGE_CODEC(DiskDetails)
CP_MESSAGE_CODEC(files::Latency)
CP_MESSAGE_CODEC(FilesRequest)
CP_MESSAGE_CODEC(FilesResult)
CP_MESSAGE_CODEC(FilesDetails)
CP_MESSAGE_CODEC(TcpListenRequest)
CP_MESSAGE_CODEC(TcpListenResult)
CP_MESSAGE_CODEC(TcpRunRequest)
CP_MESSAGE_CODEC(TcpResultRequest)
CP_MESSAGE_CODEC(TcpInfo)
CP_MESSAGE_CODEC(TcpStream)
CP_MESSAGE_CODEC(TcpResult)
CP_MESSAGE_CODEC(TcpDetails)
CP_MESSAGE_CODEC(FileRequest)
CP_MESSAGE_CODEC(FileResult)
CP_MESSAGE_CODEC(RemoveFileResult)
CP_MESSAGE_CODEC(PrepareRequest)
CP_MESSAGE_CODEC(RunDirEntry)
CP_MESSAGE_CODEC(PrepareResult)
CP_MESSAGE_CODEC(CleanOrphansRequest)
CP_MESSAGE_CODEC(CleanOrphansResult)
CP_MESSAGE_CODEC(OwnerRecord)
CP_MESSAGE_CODEC(CheckSpaceRequest)
CP_MESSAGE_CODEC(CheckSpaceResult)
CP_MESSAGE_CODEC(RevertedKnob)
CP_MESSAGE_CODEC(RefusedJournal)
CP_MESSAGE_CODEC(TuneStartReport)
CP_MESSAGE_CODEC(Hello)
CP_MESSAGE_CODEC(AgentStats)
CP_MESSAGE_CODEC(SmbStatusRequest)
CP_MESSAGE_CODEC(SmbSessionStatus)
CP_MESSAGE_CODEC(SmbStatusResult)
CP_MESSAGE_CODEC(Progress)
CP_MESSAGE_CODEC(ErrorInfo)
CP_MESSAGE_CODEC(TuneRequest)
CP_MESSAGE_CODEC(TunePlanResult)
CP_MESSAGE_CODEC(TuneConfirmResult)
CP_MESSAGE_CODEC(TuneRevertResult)
CP_MESSAGE_CODEC(ShareRef)
CP_MESSAGE_CODEC(TransferRequest)
CP_MESSAGE_CODEC(TransferResult)
CP_MESSAGE_CODEC(TransferDetails)
CP_MESSAGE_CODEC(SizeScanRequest)
CP_MESSAGE_CODEC(SizeScanResult)
CP_MESSAGE_CODEC(SizeScanDetails)
CP_MESSAGE_CODEC(FactsRequest)
CP_MESSAGE_CODEC(FilesShareRequest)
CP_MESSAGE_CODEC(FilesPhase)
CP_MESSAGE_CODEC(FilesShareResult)

#undef CP_MESSAGE_CODEC

// A message from the peer (`what`: its type, for the error), strictly.
template <class T>
T decode(const boost::json::value& v, std::string_view what) {
  T m;
  from_json(v, m, Source::kPeer, what);
  return m;
}

// Stored JSON text read back leniently: empty or damaged text gives defaults.
boost::json::value parse_stored(std::string_view text);
template <class T>
T read_stored(std::string_view text) {
  T m;
  from_json(parse_stored(text), m, Source::kStored, "");
  return m;
}

}  // namespace cp::msg
