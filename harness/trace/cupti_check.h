#pragma once
// Private to harness_cupti (includes <cupti.h>). The check macro every CUPTI call
// goes through: keeps the call text and file:line, reports through the tracer's
// error sink, never throws (a tracing failure degrades tracing, never the run).
#include <cupti.h>

#include <string>

namespace harness::trace::cupti_detail {

// Records a failed CUPTI call; returns false so call sites can bail out.
bool report_failure(CUptiResult result, const char* call, const char* file, int line);

inline bool check(CUptiResult result, const char* call, const char* file, int line) {
  return result == CUPTI_SUCCESS || report_failure(result, call, file, line);
}

std::string result_text(CUptiResult result);

}  // namespace harness::trace::cupti_detail

// True when the call succeeded. Usage: if (!NSA_CUPTI_CALL(cuptiActivityEnable(k))) return false;
#define NSA_CUPTI_CALL(call) \
  ::harness::trace::cupti_detail::check((call), #call, __FILE__, __LINE__)
