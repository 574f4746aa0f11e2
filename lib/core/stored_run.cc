#include "core/stored_run.h"

#include <boost/json.hpp>

#include <utility>

#include "core/enum_names.h"
#include "core/facts_message_json.h"
#include "core/json_util.h"
#include "core/messages_json.h"
#include "core/stored_run_json.h"
#include "core/text.h"

namespace cp::stored {

namespace json = boost::json;

namespace {

constexpr EnumName<StageKind> kKindNames[] = {{StageKind::kDisk, "disk"},
                                              {StageKind::kTcp, "tcp"},
                                              {StageKind::kProtocol, "protocol"},
                                              {StageKind::kSizeScan, "size_scan"},
                                              {StageKind::kFiles, "files"}};
constexpr EnumName<Place> kPlaceNames[] = {{Place::kServer, "server"},
                                           {Place::kClient, "client"},
                                           {Place::kServerToClient, "server->client"},
                                           {Place::kClientToServer, "client->server"},
                                           {Place::kRam, "ram"},
                                           {Place::kDisk, "disk"},
                                           {Place::kOther, "other"}};

}  // namespace

const char* kind_name(StageKind k) { return name_in(kKindNames, k, "disk"); }

const char* place_name(Place p) { return name_in(kPlaceNames, p, "other"); }

JsonDoc::JsonDoc() : v_(std::make_shared<const json::value>(nullptr)) {}
JsonDoc::JsonDoc(std::shared_ptr<const json::value> v) : v_(std::move(v)) {
  if (!v_) v_ = std::make_shared<const json::value>(nullptr);
}

const msg::CpuSummary* Sample::cpu_of(std::string_view role) const {
  if (!cpu) return nullptr;
  for (const EndCpu& e : *cpu) {
    if (e.role == role) return &e.cpu;
  }
  return nullptr;
}

const Host* Run::host(std::string_view role) const {
  for (const Host& h : hosts) {
    if (h.role == role) return &h;
  }
  return nullptr;
}

namespace {

JsonDoc doc(std::string_view text) {
  return JsonDoc(std::make_shared<const json::value>(parse_json_or_null(text)));
}

// The stage's kind from its stored columns: "disk" and "tcp" name
// themselves; any other layer is a protocol driver, whose size-scan stages are
// told by their parameters ({"sweep": true}) or their samples' ops.
StageKind kind_of(const StageRecord& st, const json::value& params) {
  if (st.layer == "disk") return StageKind::kDisk;
  if (st.layer == "tcp") return StageKind::kTcp;
  if (st.layer == "files") return StageKind::kFiles;
  if (params.is_object()) {
    const json::value* scan = params.as_object().if_contains("sweep");
    if (scan && scan->is_bool() && scan->as_bool()) return StageKind::kSizeScan;
  }
  for (const SampleRecord& s : st.samples) {
    if (s.op.rfind("sweep-", 0) == 0) return StageKind::kSizeScan;
    if (s.op.rfind("files-", 0) == 0) return StageKind::kFiles;  // a share's small files
  }
  return StageKind::kProtocol;
}

Place place_of(std::string_view where) {
  return value_in(kPlaceNames, where).value_or(Place::kOther);
}

template <class T>
T stored_as(const json::value& v) {
  T m;
  msg::from_json(v, m, msg::Source::kStored, "");
  return m;
}

Details decode_details(StageKind kind, const json::value& v) {
  Details d;
  if (!v.is_object()) return d;
  switch (kind) {
    case StageKind::kDisk:
      d.kind = stored_as<msg::DiskDetails>(v);
      break;
    case StageKind::kTcp:
      d.kind = stored_as<msg::TcpDetails>(v);
      break;
    case StageKind::kProtocol:
      d.kind = stored_as<msg::TransferDetails>(v);
      break;
    case StageKind::kSizeScan:
      d.kind = stored_as<msg::SizeScanDetails>(v);
      break;
    case StageKind::kFiles:
      d.kind = stored_as<msg::FilesDetails>(v);
      break;
  }
  const json::object& o = v.as_object();
  if (const json::value* s = o.if_contains("stalled"); s && s->is_bool()) d.stalled = s->as_bool();
  if (const json::value* s = o.if_contains("silent_seconds"); s && s->is_number()) {
    d.silent_seconds = s->to_number<double>();
  }
  return d;
}

std::optional<std::vector<EndCpu>> decode_cpu(const json::value& v) {
  if (!v.is_object()) return std::nullopt;
  std::vector<EndCpu> ends;
  for (const auto& [role, summary] : v.as_object()) {
    ends.push_back({std::string(role), msg::cpu_summary_from_json(summary)});
  }
  return ends;
}

std::optional<msg::Facts> decode_facts(std::string_view text) {
  const json::value v = msg::parse_stored(text);
  if (!v.is_object()) return std::nullopt;
  msg::Facts f;
  msg::from_json(v, f, msg::Source::kStored, "facts");
  return f;
}

double planned_link(const json::value& plan) {
  if (!plan.is_object()) return 0;
  const json::value* link = plan.as_object().if_contains("link");
  if (!link || !link->is_object()) return 0;
  const json::value* bits = link->as_object().if_contains("nominal_bits");
  return bits && bits->is_number() ? bits->to_number<double>() : 0;
}

}  // namespace

Run decode(const RunRecord& r) {
  Run run;
  static_cast<RunHead&>(run) = r;
  run.plan = doc(r.plan_json);
  run.planned_link_bits = planned_link(run.plan.value());
  for (const HostRecord& h : r.hosts)
    run.hosts.push_back({h.role, h.address, decode_facts(h.facts_json)});
  for (const StageRecord& st : r.stages) {
    Stage s;
    static_cast<StageHead&>(s) = st;
    s.params = doc(st.params_json);
    s.kind = kind_of(st, s.params.value());
    s.place = place_of(st.where);
    s.driver = st.layer;
    for (const SampleRecord& sr : st.samples) {
      Sample x;
      static_cast<SampleHead&>(x) = sr;
      x.details = decode_details(s.kind, msg::parse_stored(sr.details_json));
      x.cpu = decode_cpu(msg::parse_stored(sr.cpu_json));
      s.samples.push_back(std::move(x));
    }
    run.stages.push_back(std::move(s));
  }
  return run;
}

json::value to_json(const Details& d) {
  json::value v = std::visit(
      [](const auto& k) -> json::value {
        if constexpr (std::is_same_v<std::decay_t<decltype(k)>, std::monostate>) {
          return nullptr;
        } else {
          return msg::to_json(k);
        }
      },
      d.kind);
  if (!d.stalled) return v;
  json::object o = v.is_object() ? v.as_object() : json::object{};
  o["stalled"] = true;
  o["silent_seconds"] = d.silent_seconds;
  return o;
}

json::value to_json(const std::optional<std::vector<EndCpu>>& cpu) {
  if (!cpu) return nullptr;
  json::object o;
  for (const EndCpu& e : *cpu) o[e.role] = msg::to_json(e.cpu);
  return o;
}

json::value to_json(const std::optional<msg::Facts>& facts) {
  if (!facts) return nullptr;
  return msg::to_json(*facts);
}

namespace {

// True when `s` needed it.
bool clean(std::string& s) {
  std::string safe = sanitize_field(s);
  if (safe == s) return false;
  s = std::move(safe);
  return true;
}

// `m` through its codec with every string sanitized, when any needs it (true).
template <class T, class Decode>
bool clean_via_json(T& m, json::value v, Decode decode) {
  if (!sanitize_json(v)) return false;
  m = decode(v);
  return true;
}

}  // namespace

Run sanitized(const Run& run, bool* changed) {
  Run r = run;
  bool any = false;
  for (std::string* s : {&r.label, &r.status, &r.error, &r.server, &r.client, &r.version}) {
    any |= clean(*s);
  }
  auto clean_doc = [&any](JsonDoc& d) {
    json::value v = d.value();
    if (!sanitize_json(v)) return;
    d = JsonDoc(std::make_shared<const json::value>(std::move(v)));
    any = true;
  };
  clean_doc(r.plan);
  for (Host& h : r.hosts) {
    any |= clean(h.role);
    any |= clean(h.address);
    any |= clean_via_json(h.facts, to_json(h.facts), [](const json::value& v) {
      msg::Facts f;
      msg::from_json(v, f, msg::Source::kStored, "facts");
      return std::optional<msg::Facts>(std::move(f));
    });
  }
  for (Stage& st : r.stages) {
    for (std::string* s : {&st.driver, &st.where, &st.status, &st.error}) any |= clean(*s);
    clean_doc(st.params);
    for (Sample& sa : st.samples) {
      any |= clean(sa.op);
      any |= clean(sa.error);
      const StageKind kind = st.kind;
      any |= clean_via_json(sa.details, to_json(sa.details),
                            [kind](const json::value& v) { return decode_details(kind, v); });
      any |= clean_via_json(sa.cpu, to_json(sa.cpu), decode_cpu);
    }
  }
  if (changed) *changed = any;
  return r;
}

}  // namespace cp::stored
