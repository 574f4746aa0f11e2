// `diagnose --push URL`: a run's OpenMetrics text to a Prometheus Pushgateway.
#pragma once

#include <string>

#include "analysis/ladder.h"
#include "core/stored_run.h"

namespace cp::app {

// Where a run's metrics go on a Pushgateway at `base` ("http://gw:9091"): the
// group job="chokepoint", instance=<server>, client=<client>, so each pair of
// hosts keeps its own latest run. Label values are base64url-encoded
// ("instance@base64/..."), so any host name fits in the path. A `base` that
// already names a group (".../metrics/job/...") is used as it is.
std::string pushgateway_group_url(const std::string& base, const std::string& server,
                                  const std::string& client);

// PUTs `body` (Prometheus text format 0.0.4) to `url`, replacing the group's
// metrics. Throws Error(kIo) naming the URL and the gateway's answer when it
// cannot connect or answers other than 2xx; gives up after `timeout_s`.
void push_metrics(const std::string& url, const std::string& body, double timeout_s = 30);

// Throws Error(kUsage) unless `base` is an http(s) URL: checked before a run
// starts, so a typo does not cost a whole diagnosis.
void check_push_url(const std::string& base);

// A stored run's metrics (report::export_openmetrics) pushed to its group on
// the Pushgateway at `base`; returns the group's URL.
std::string push_run(const stored::Run& run, const analysis::Analysis& a, const std::string& base);

}  // namespace cp::app
