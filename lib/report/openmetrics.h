// A run's figures and verdicts as OpenMetrics text (`chokepoint export
// --format openmetrics`, `diagnose --push`): a file for node_exporter's
// textfile collector, or the body pushed to a Prometheus Pushgateway.
#pragma once

#include <string>

#include "analysis/ladder.h"
#include "core/stored_run.h"

namespace cp::report {

// Every family is a gauge (the only type both OpenMetrics and the Prometheus
// text format 0.0.4 that the Pushgateway parses agree on), with HELP and TYPE;
// every sample carries the run's labels: server, client, run_label. Families:
//   chokepoint_run_info{version,status,run_id}                 1
//   chokepoint_run_start_timestamp_seconds                      Unix seconds
//   chokepoint_run_duration_seconds
//   chokepoint_layer_throughput_bytes_per_second{layer,protocol,path,where,op,size}
//                                                               the row's median
//   chokepoint_layer_samples{...same}                           successful samples
//   chokepoint_layer_failed_samples{...same}
//   chokepoint_layer_beneath_ratio{...same,beneath}             median / the layer beneath's
//   chokepoint_path_verdict{path,layer,cap}                     1 per answered path
// `layer` is the row's layer ("disk", "tcp", "link", or the protocol's driver
// name), `protocol` the driver name ("" for disk/tcp/link), `path` the verdict's
// path of a protocol row ("smb ram read"), `size` bytes; a label that does not
// apply (protocol of a disk row, size of TCP) is left out. Rows of
// the transfer-size scan are left out (they are no layer of the ladder).
struct OpenMetricsOptions {
  // End with `# EOF` (OpenMetrics); the Pushgateway's 0.0.4 parser wants none.
  bool eof = true;
};
std::string export_openmetrics(const stored::Run& run, const analysis::Analysis& a,
                               const OpenMetricsOptions& o = {});

// A label value escaped as both formats want it: backslash, double quote and
// newline escaped; any other control character replaced by a space.
std::string openmetrics_label_value(const std::string& v);

}  // namespace cp::report
